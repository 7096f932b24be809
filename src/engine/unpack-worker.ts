import { writeSync } from "node:fs";
import { createObjectStore } from "../adapters/storage/index";
import { plainBytes } from "./parse/layers";
import { DEFAULT_LIMITS, EngineInputError, type ProcessRequest } from "./types";

/**
 * Worker thread (started by src/engine/unpack.ts, one per packed file): reads
 * the original from the store, decrypts and inflates it as openInput would
 * (src/engine/parse/layers.ts) and writes the plain bytes to `fd`, a temp
 * file the starting thread opened (and already unlinked). Tells it, as it
 * goes, how far the file is written and how much of the original is read.
 */
export type UnpackRequest = { req: ProcessRequest; fd: number };

export type UnpackReport =
  | { type: "wrote"; written: number; read: number }
  | { type: "layers"; gzip: boolean; pgp?: { signatureVerified: boolean } }
  | { type: "done"; written: number; read: number }
  /** `input`: the file's fault (a bomb, a bad signature: the same words openInput says); else storage or the disk. */
  | { type: "failed"; message: string; input: boolean };

declare const self: Worker;

/** Written bytes reported at least this often (each report lets the stripes take more of the file). */
const REPORT_BYTES = 1024 * 1024;

self.onmessage = async (event: MessageEvent<UnpackRequest>) => {
  const { req, fd } = event.data;
  const post = (r: UnpackReport) => self.postMessage(r);
  let read = 0;
  let written = 0;
  try {
    const original = await createObjectStore(req.storage).get(req.originalKey);
    if (!original) throw new Error(`the original ${req.originalKey} is missing`);
    const counted = async function* () {
      for await (const c of original as unknown as AsyncIterable<Uint8Array>) {
        read += c.byteLength;
        yield c;
      }
    };
    const plain = await plainBytes(counted(), { filename: req.filename, pgp: req.pgp }, { ...DEFAULT_LIMITS, ...req.limits });
    post({ type: "layers", gzip: plain.gzip, ...(plain.pgp ? { pgp: plain.pgp } : {}) });
    let reported = 0;
    for await (const chunk of plain.reader.chunks()) {
      for (let at = 0; at < chunk.byteLength; ) at += writeSync(fd, chunk, at, chunk.byteLength - at, written + at);
      written += chunk.byteLength;
      if (written - reported >= REPORT_BYTES) {
        reported = written;
        post({ type: "wrote", written, read });
      }
    }
    post({ type: "done", written, read });
  } catch (e) {
    post({ type: "failed", message: e instanceof Error ? e.message : String(e), input: e instanceof EngineInputError });
  }
};
