import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { type Reader, type Writer, uniqueViolation } from "../../../db/client";
import { cachedRead, readCacheSpec } from "../../../db/read-cache";
import type { pipelines } from "../../../db/pg/schema";
import { AppError, notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";
import type { Pipeline } from "./shapes";

export type PipelineRow = typeof pipelines.$inferSelect;
export interface WebhookRef {
  id: string;
  name: string;
  url: string;
}
export interface PipelineRecord {
  row: PipelineRow;
  webhooks: WebhookRef[];
}

export async function loadPipelineRow(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read) {
  const p = ctx.db.t.pipelines;
  // Outside a transaction, the statement prepared once (a hot read: GET /pipelines/{id}, uploads).
  const [row] =
    r === ctx.db.read
      ? await ctx.db.prepared("pipelines.byId", (q) =>
          q
            .select()
            .from(p)
            .where(and(eq(p.id, sql.placeholder("id")), eq(p.workspaceId, sql.placeholder("workspaceId")))),
        )({ id: opts.id, workspaceId: opts.workspaceId })
      : await r.select().from(p).where(and(eq(p.id, opts.id), eq(p.workspaceId, opts.workspaceId)));
  if (!row) throw notFound("pipeline", opts.id);
  return row;
}

/**
 * A pipeline's webhooks, prepared once. An IN-subquery, not a join: on
 * SQLite a join costs about 10 µs more per execution than two index lookups
 * (docs/decisions/hot-path.md).
 */
function webhooksOf(ctx: ServiceContext, pipelineId: string): Promise<WebhookRef[]> {
  const { pipelineWebhooks: pw, webhooks: wh } = ctx.db.t;
  return ctx.db.prepared("pipelines.webhooksOf", (q) =>
    q
      .select({ id: wh.id, name: wh.name, url: wh.url })
      .from(wh)
      .where(inArray(wh.id, q.select({ id: pw.webhookId }).from(pw).where(eq(pw.pipelineId, sql.placeholder("pipelineId")))))
      .orderBy(asc(wh.name), asc(wh.id)),
  )({ pipelineId });
}

/** Attaches linked webhooks to pipeline rows with one query. */
export async function withWebhooks(ctx: ServiceContext, rows: PipelineRow[], r: Reader = ctx.db.read): Promise<PipelineRecord[]> {
  if (rows.length === 0) return [];
  if (rows.length === 1 && r === ctx.db.read) return [{ row: rows[0]!, webhooks: await webhooksOf(ctx, rows[0]!.id) }];
  const { pipelineWebhooks: pw, webhooks: wh } = ctx.db.t;
  const links = await r
    .select({ pipelineId: pw.pipelineId, id: wh.id, name: wh.name, url: wh.url })
    .from(pw)
    .innerJoin(wh, eq(wh.id, pw.webhookId))
    .where(
      inArray(
        pw.pipelineId,
        rows.map((x) => x.id),
      ),
    )
    .orderBy(asc(wh.name), asc(wh.id));
  const byPipeline = new Map<string, WebhookRef[]>();
  for (const l of links) {
    const list = byPipeline.get(l.pipelineId) ?? [];
    list.push({ id: l.id, name: l.name, url: l.url });
    byPipeline.set(l.pipelineId, list);
  }
  return rows.map((row) => ({ row, webhooks: byPipeline.get(row.id) ?? [] }));
}

/**
 * Postgres: a pipeline with its webhooks in one prepared statement (the
 * webhooks as a JSON array from a correlated subquery), one round trip and
 * one query for the server instead of two. SQLite runs two statements a
 * little faster than one with a JSON aggregate (docs/decisions/hot-path.md).
 */
function pipelineWithWebhooks(ctx: ServiceContext, opts: { workspaceId: string; id: string }) {
  const { pipelines: p, pipelineWebhooks: pw, webhooks: wh } = ctx.db.t;
  const linked = sql`${wh} where ${wh.id} in (select ${pw.webhookId} from ${pw} where ${pw.pipelineId} = ${p.id})`;
  const webhooks = sql`coalesce((select json_agg(json_build_object('id', ${wh.id}, 'name', ${wh.name}, 'url', ${wh.url}) order by ${wh.name}, ${wh.id}) from ${linked}), '[]'::json)`;
  return ctx.db.prepared("pipelines.byIdWithWebhooks", (q) =>
    q
      .select({
        row: p,
        // postgres.js hands json back parsed.
        webhooks: webhooks.mapWith((v: unknown) => (typeof v === "string" ? JSON.parse(v) : v) as WebhookRef[]),
      })
      .from(p)
      .where(and(eq(p.id, sql.placeholder("id")), eq(p.workspaceId, sql.placeholder("workspaceId")))),
  )({ id: opts.id, workspaceId: opts.workspaceId });
}

/** A pipeline with its webhooks, by workspace and id. */
const PIPELINE_READS = readCacheSpec<PipelineRecord>("pipelines.withWebhooks", ["pipelines", "pipeline_webhooks", "webhooks"]);

export async function loadPipeline(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read): Promise<PipelineRecord> {
  if (r === ctx.db.read) return readPipeline(ctx, opts);
  const row = await loadPipelineRow(ctx, opts, r);
  const [rec] = await withWebhooks(ctx, [row], r);
  return rec!;
}

/**
 * A pipeline outside a transaction (GET /pipelines/{id}, the hottest read):
 * kept until a commit could change it (db/read-cache.ts), and then answered
 * at once, without a promise; else read with prepared statements. A missing
 * pipeline is looked up each time.
 */
export function readPipeline(ctx: ServiceContext, opts: { workspaceId: string; id: string }): PipelineRecord | Promise<PipelineRecord> {
  return cachedRead(ctx.db.readCache(PIPELINE_READS), `${opts.workspaceId}/${opts.id}`, async () => {
    if (ctx.db.dialect === "pg") {
      const [found] = await pipelineWithWebhooks(ctx, opts);
      if (!found) throw notFound("pipeline", opts.id);
      return found;
    }
    const [row, webhooks] = await Promise.all([loadPipelineRow(ctx, opts), webhooksOf(ctx, opts.id)]);
    return { row, webhooks };
  });
}

/** Replaces a pipeline's webhook links (`created`: a pipeline inserted in this transaction has none to remove). */
export async function linkWebhooks(ctx: ServiceContext, w: Writer, row: PipelineRow, webhookIds: string[], opts: { created?: boolean } = {}): Promise<void> {
  const pw = ctx.db.t.pipelineWebhooks;
  if (!opts.created) await w.delete(pw).where(eq(pw.pipelineId, row.id));
  if (webhookIds.length > 0) {
    await w.insert(pw).values(webhookIds.map((webhookId) => ({ pipelineId: row.id, webhookId, workspaceId: row.workspaceId })));
  }
}

export function presentPipeline(rec: PipelineRecord): Pipeline {
  const r = rec.row;
  const out: Pipeline = {
    id: r.id,
    name: r.name,
    workspaceId: r.workspaceId,
    mappings: r.mappings,
    isActive: r.isActive,
    clientId: r.connectionId,
    schemaId: r.schemaId,
    direction: r.direction as Pipeline["direction"],
    version: r.version,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
  if (rec.webhooks.length > 0) out.webhooks = rec.webhooks;
  return out;
}

export function pipelineConflict(e: unknown, name: string): never {
  if (uniqueViolation(e)) throw new AppError("conflict", `name: a pipeline named '${name}' already exists`);
  throw e;
}
