import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { complete, keysUnder, outboundPipeline, putPart, readSpaceFile, startUpload } from "./helpers/outbound";
import { waitForRun } from "./helpers/runs";
import { startS3, type TestS3 } from "./helpers/s3";

/**
 * Outbound uploads unchanged on S3 (s3rver on loopback, S3_* settings):
 * parts, the combined file (streamed from the parts' objects), the run's
 * files and the delivered file all live in the bucket.
 */
let s3: TestS3;
let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  s3 = await startS3();
  h = await Harness.start({ env: s3.env });
  ws = await h.workspace();
}, 60_000);
afterAll(async () => {
  await h?.close();
  await s3?.stop();
}, 60_000);

test("parts in the bucket, one run, the CSV delivered to the hosted outbound folder byte for byte", async () => {
  expect(h.svc.storage.kind).toBe("s3");
  const fx = await outboundPipeline(h, ws, { connectionName: "S3 partner", name: "S3 out" });
  const created = await startUpload(h, ws, { connectionName: "S3 partner", pipelineName: "S3 out", totalParts: 3, outputFilename: "items", outputFormat: "csv" });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.uploadId;
  expect((await putPart(h, ws, id, 3, [{ SKU: "d-4", Qty: "1", Name: "Schraube ä" }])).status).toBe(200);
  expect(
    (
      await putPart(h, ws, id, 1, [
        { SKU: "a-1", Qty: "3", Name: " Bolt " },
        { SKU: "b-2", Qty: 10, Name: "Nut, hex" },
      ])
    ).status,
  ).toBe(200);
  expect((await putPart(h, ws, id, 2, [{ SKU: "c-3", Qty: "7", Name: 'Washer "flat" <M8> & co' }])).status).toBe(200);
  expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${id}/`)).toHaveLength(3);

  const done = await complete(h, ws, id, [1, 2, 3]);
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  const run = await waitForRun(h, ws, done.body.runId, ["delivered", "failed"]);
  expect(run.errorMessage).toBeUndefined();
  expect(run.status).toBe("delivered");
  const delivered = await readSpaceFile(h, ws, fx.connection.id, "outbound/items.csv");
  expect(Buffer.compare(Buffer.from(delivered!), readFileSync(join(import.meta.dir, "fixtures", "outbound", "items.csv")))).toBe(0);
  expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${id}/`)).toEqual([]);
});
