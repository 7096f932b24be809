// Shared by the engine's tests: a real local object store in a temp folder and request builders.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createObjectStore } from "../../src/adapters/storage/index";
import type { ObjectStore, StorageConfig } from "../../src/adapters/storage/port";
import type { ProcessRequest, SchemaRef } from "../../src/engine/types";
import { PipelineMappings } from "../../src/domain/mappings";

export interface TestStore {
  store: ObjectStore;
  config: StorageConfig;
  text(key: string): Promise<string | null>;
  close(): void;
}

export function localStore(): TestStore {
  const root = mkdtempSync(join(tmpdir(), "fps-engine-"));
  const config: StorageConfig = { kind: "local", root, publicUrl: "http://localhost:3000", signingKey: Buffer.alloc(32, 7).toString("base64") };
  const store = createObjectStore(config);
  return {
    store,
    config,
    async text(key) {
      const body = await store.get(key);
      return body ? new Response(body).text() : null;
    },
    close: () => rmSync(root, { recursive: true, force: true }),
  };
}

export const PEOPLE_SCHEMA: SchemaRef = {
  id: "sch_people",
  version: "1",
  definition: {
    type: "object",
    properties: { id: { type: "integer" }, name: { type: "string" }, email: { type: "string", format: "email" }, age: { type: "integer" }, city: { type: "string" } },
    required: ["id", "name"],
  },
};

let seq = 0;

/** A request for `filename` already stored at its original key; `mappings` as a client would send them. */
export function request(t: TestStore, filename: string, mappings: unknown = {}, schema: SchemaRef = PEOPLE_SCHEMA, outputFormat: ProcessRequest["outputFormat"] = "json"): ProcessRequest {
  const runId = `run_t${++seq}`;
  return {
    runId,
    filename,
    storage: t.config,
    originalKey: `runs/${runId}/original/${filename}`,
    processedKey: `runs/${runId}/processed.${outputFormat}`,
    rejectsKey: `runs/${runId}/rejects.json`,
    outputFormat,
    mappings: PipelineMappings.parse(mappings),
    schema,
  };
}

/** The processed file's rows (the fixed layout: one JSON object per line). */
export function jsonLines(text: string): unknown[] {
  const lines = text.split("\n");
  if (lines[0] !== "[" || lines.at(-1) !== "" || lines.at(-2) !== "]") throw new Error(`not the processed layout: ${text.slice(0, 200)}`);
  return lines.slice(1, -2).map((l, i, all) => JSON.parse(i < all.length - 1 ? l.replace(/,$/, "") : l));
}
