import { createHash } from "node:crypto";
import type { Actor, ServiceContext } from "../services/context";
import {
  checkIdempotencyKey,
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  replayFor,
  type StoredAnswer,
} from "../services/idempotency";

/**
 * `Idempotency-Key` on REST (docs/decisions/idempotency.md): every POST, and
 * the PUT routes that declare `idempotencyKey: true` (src/http/call.ts). A JSON route's fingerprint is a digest of
 * its method, path and body, known before the claim; a route that reads its
 * own body (uploads) digests what it reads, and on a replay reads the body
 * again to compare.
 */
export interface Idempotency {
  key: string;
  workspaceId: string;
  method: string;
  path: string;
  /** The first answer, when this request repeats a completed one. */
  replay: StoredAnswer | null;
  /** The digest of what this request sent, once known. */
  fingerprint: string | null;
  /** The route reads its own body: it checks a replay itself (ownBodyReplay). */
  ownBody: boolean;
}

const states = new WeakMap<Request, Idempotency>();
export const idempotencyOf = (request: Request): Idempotency | undefined => states.get(request);

/** A digest of a value as JSON with sorted members (the same request sent twice digests alike). */
export function digestOf(value: unknown, prefix = ""): string {
  const h = createHash("sha256").update(prefix);
  const write = (v: unknown): void => {
    if (Array.isArray(v)) {
      h.update("[");
      for (const x of v) {
        write(x);
        h.update(",");
      }
      h.update("]");
    } else if (v && typeof v === "object" && !(v instanceof Date)) {
      h.update("{");
      for (const k of Object.keys(v).sort()) {
        h.update(JSON.stringify(k));
        h.update(":");
        write((v as Record<string, unknown>)[k]);
        h.update(",");
      }
      h.update("}");
    } else h.update(JSON.stringify(v) ?? "undefined");
  };
  write(value);
  return h.digest("hex");
}

/** Claims the key the request sent (`Idempotency-Key`) on a route that takes one. */
export async function claimFor(
  svc: ServiceContext,
  request: Request,
  opts: { key: string; actor: Actor; path: string; ownBody: boolean; input: unknown },
): Promise<void> {
  const key = checkIdempotencyKey(opts.key);
  const fingerprint = opts.ownBody ? null : digestOf(opts.input, `${request.method} ${opts.path}\n`);
  const state: Idempotency = { key, workspaceId: opts.actor.workspaceId, method: request.method, path: opts.path, replay: null, fingerprint, ownBody: opts.ownBody };
  const claim = await claimIdempotencyKey(svc, { workspaceId: state.workspaceId, key, method: state.method, path: state.path, fingerprint });
  if (claim.kind === "replay") state.replay = claim.answer;
  states.set(request, state);
}

/** A route that reads its own body, on a replay: the first answer if what it read now is what the first request sent (else 409). */
export function ownBodyReplay(state: Idempotency, fingerprint: string): StoredAnswer {
  return replayFor(state.key, state.replay as StoredAnswer, fingerprint, `${state.method} ${state.path}`);
}

/** After the handler: a first request's success is stored; any failure frees the key. */
export async function settle(svc: ServiceContext, request: Request, outcome: { status: number; body: unknown } | null): Promise<void> {
  const state = states.get(request);
  if (!state || state.replay) return;
  states.delete(request);
  const ref = { workspaceId: state.workspaceId, key: state.key };
  if (outcome && outcome.status < 300) await completeIdempotencyKey(svc, { ...ref, status: outcome.status, body: outcome.body, fingerprint: state.fingerprint });
  else await releaseIdempotencyKey(svc, ref).catch((err) => svc.log.warn({ err, key: state.key }, "idempotency key not released"));
}

/** Hashes a streamed body as it passes, setting the request's fingerprint once it has all gone by. */
export function hashing(state: Idempotency, body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  const h = createHash("sha256").update(`${state.method} ${state.path}\n`);
  return {
    async *[Symbol.asyncIterator]() {
      for await (const chunk of body) {
        h.update(chunk);
        yield chunk;
      }
      state.fingerprint = h.digest("hex");
    },
  };
}

/** The digest `hashing` would give for this body, reading it to the end. */
export async function digestStream(state: Pick<Idempotency, "method" | "path">, body: AsyncIterable<Uint8Array>): Promise<string> {
  const h = createHash("sha256").update(`${state.method} ${state.path}\n`);
  for await (const chunk of body) h.update(chunk);
  return h.digest("hex");
}
