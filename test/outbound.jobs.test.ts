import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jobDefinitions } from "../src/jobs/definitions";
import type { JobContext, JobDefinition } from "../src/jobs/port";
import { runJob } from "../src/jobs/run-job";
import { deliverRun, PermanentDeliveryError } from "../src/services/run-path/process/delivery";
import { ENDED_RETENTION_MS, OUTBOUND_EXPIRE_CRON, OUTBOUND_EXPIRE_JOB } from "../src/services/outbound";
import { RUN_JOB, RUN_JOB_ATTEMPTS } from "../src/services/runs";
import { loadRunRow } from "../src/services/runs/record";
import { createLogger } from "../src/logger";
import { expectError } from "./helpers/expect";
import { Harness, NOW, type TestWorkspace } from "./helpers/harness";
import { complete, keysUnder, outboundPipeline, putPart, selfHostedConnection, startUpload, uploadAll } from "./helpers/outbound";
import type { PipelineFixture } from "./helpers/runs";

/**
 * The jobs around outbound uploads, driven by hand (no worker claims jobs
 * here) under an injected clock: the cron job that expires sessions, and
 * run.process delivering to a self-hosted connection whose server is down.
 */
const TTL_SECONDS = 3600;
let h: Harness;
let ws: TestWorkspace;
let hosted: PipelineFixture;
let expireJob: JobDefinition<any>;
let runJobDef: JobDefinition<any>;

const jobContext = (attempt = 1): JobContext => ({ jobId: `job_test_${attempt}`, attempt, maxAttempts: RUN_JOB_ATTEMPTS, signal: new AbortController().signal });
const expire = () => expireJob.handle(expireJob.parse(null), jobContext());
const partsPrefix = (id: string) => `ws/${ws.workspaceId}/outbound-uploads/${id}/`;
const at = (ms: number) => h.clock.set(new Date(NOW.getTime() + ms).toISOString());

beforeAll(async () => {
  h = await Harness.start({ startJobs: false, env: { OUTBOUND_UPLOAD_TTL_SECONDS: String(TTL_SECONDS) } });
  ws = await h.workspace();
  hosted = await outboundPipeline(h, ws, { connectionName: "Hosted", name: "Hosted out" });
  const defs = jobDefinitions(h.svc);
  expireJob = defs.definitions.find((d) => d.name === OUTBOUND_EXPIRE_JOB)!;
  runJobDef = defs.definitions.find((d) => d.name === RUN_JOB)!;
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe("expiry", () => {
  test("the expiry job is registered with its cron schedule", () => {
    expect(expireJob).toBeDefined();
    expect(jobDefinitions(h.svc).crons).toContainEqual({ name: OUTBOUND_EXPIRE_JOB, cron: OUTBOUND_EXPIRE_CRON, job: OUTBOUND_EXPIRE_JOB });
  });

  test("a session not completed within OUTBOUND_UPLOAD_TTL_SECONDS expires: refused at once, then marked expired and its parts deleted", async () => {
    at(0);
    const created = await startUpload(h, ws, { connectionName: "Hosted", pipelineName: "Hosted out", totalParts: 2 });
    const id = created.body.uploadId;
    expect(created.body.expiresAt).toBe(new Date(NOW.getTime() + TTL_SECONDS * 1000).toISOString());
    expect((await putPart(h, ws, id, 1, [{ SKU: "x-1", Qty: "1" }])).status).toBe(200);
    // A session completed in time is not touched by the job.
    const kept = await startUpload(h, ws, { connectionName: "Hosted", pipelineName: "Hosted out", totalParts: 1 });

    at(TTL_SECONDS * 1000 - 1);
    await expire();
    expect((await h.ok(ws, "GET", `/outbound/uploads/${id}`)).status).toBe("initiated");
    expect((await putPart(h, ws, id, 2, [{ SKU: "x-2", Qty: "2" }])).status).toBe(200);
    await uploadAll(h, ws, kept.body.uploadId, [[{ SKU: "k-1", Qty: "1" }]]);

    at(TTL_SECONDS * 1000);
    // Past expiresAt it reads as expired and refuses parts and completion, before the job has run.
    expect((await h.ok(ws, "GET", `/outbound/uploads/${id}`)).status).toBe("expired");
    expectError(await putPart(h, ws, id, 2, []), 409, "conflict", /expired at .* without being completed; its parts are deleted/);
    expectError(await complete(h, ws, id, [1, 2]), 409, "conflict", /expired/);
    expect(await keysUnder(h, partsPrefix(id))).toHaveLength(2);

    at(TTL_SECONDS * 1000 + 60_000);
    await expire();
    const s = await h.ok(ws, "GET", `/outbound/uploads/${id}`);
    expect(s).toMatchObject({ status: "expired", runId: null, partsReceived: 2, endedAt: new Date(NOW.getTime() + TTL_SECONDS * 1000 + 60_000).toISOString() });
    expect(s.errorMessage).toMatch(/^not completed before it expired at /);
    expect(await keysUnder(h, partsPrefix(id))).toEqual([]);
    expect((await h.ok(ws, "GET", `/outbound/uploads/${kept.body.uploadId}`)).status).toBe("completed");
    // Running again changes nothing.
    await expire();
    expect(await h.ok(ws, "GET", `/outbound/uploads/${id}`)).toEqual(s);

    // Ended sessions are deleted 30 days after their expiry.
    at(TTL_SECONDS * 1000 + ENDED_RETENTION_MS - 1);
    await expire();
    expect((await h.api(ws, "GET", `/outbound/uploads/${id}`)).status).toBe(200);
    at(TTL_SECONDS * 1000 + ENDED_RETENTION_MS);
    await expire();
    for (const gone of [id, kept.body.uploadId]) expectError(await h.api(ws, "GET", `/outbound/uploads/${gone}`), 404, "not_found");
    expect(await h.svc.db.read.$count(h.svc.db.t.outboundUploadParts)).toBe(0);
    at(0);
  });
});

describe("delivery", () => {
  test("a self-hosted connection takes sessions like a hosted one", async () => {
    const conn = await selfHostedConnection(h, ws, "Partner Server");
    await outboundPipeline(h, ws, { connectionId: conn.id, name: "Partner out" });
    const r = await startUpload(h, ws, { connectionName: "partner server", pipelineName: "Partner out", totalParts: 1, outputFormat: "csv" });
    expect(r.status).toBe(200);
    expect((await h.ok(ws, "GET", `/outbound/uploads/${r.body.uploadId}`)).connectionName).toBe("Partner Server");
  });

  test("a delivery that fails is retried by the job; after the last attempt the run fails saying why, and nothing is delivered", async () => {
    const done = (await startUpload(h, ws, { connectionName: "Partner Server", pipelineName: "Partner out", totalParts: 1, outputFilename: "to-partner.csv" })).body;
    const completed = await uploadAll(h, ws, done.uploadId, [[{ SKU: "s-1", Qty: "1", Name: "Sent" }]]);
    const runId = completed.runId;
    const payload = runJobDef.parse({ runId, attempt: 1 });

    // One attempt: processing succeeds, delivery throws, the run stays processing for the next attempt.
    const error = await runJobDef.handle(payload, jobContext(1)).then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/^delivery to the SFTP server of connection 'Partner Server' failed: /);
    const during = await h.ok(ws, "GET", `/pipeline-runs/${runId}`);
    expect(during.status).toBe("processing");

    // The last attempt, as the queue runs it: it fails again and the run is given up.
    const outcome = await runJob({
      definition: runJobDef,
      payload: { runId, attempt: 1 },
      jobId: "job_last",
      attempt: RUN_JOB_ATTEMPTS,
      maxAttempts: RUN_JOB_ATTEMPTS,
      signal: new AbortController().signal,
      retry: { baseMs: 1, maxMs: 1 },
      log: createLogger("silent"),
    });
    expect(outcome.status).toBe("failed");
    const failed = await h.ok(ws, "GET", `/pipeline-runs/${runId}`);
    expect(failed.status).toBe("failed");
    expect(failed.errorMessage).toMatch(
      new RegExp(`^processing failed after ${RUN_JOB_ATTEMPTS} attempts: delivery to the SFTP server of connection 'Partner Server' failed: .+; retry with POST /pipeline-runs/${runId}/retry$`),
    );
    expect(failed.metadata.delivery).toBeUndefined();
    // The session stays completed: its run carries the failure.
    expect((await h.ok(ws, "GET", `/outbound/uploads/${done.uploadId}`)).status).toBe("completed");
  });

  test("a hosted delivery ends delivered by the same job", async () => {
    const up = (await startUpload(h, ws, { connectionName: "Hosted", pipelineName: "Hosted out", totalParts: 1 })).body;
    const completed = await uploadAll(h, ws, up.uploadId, [[{ SKU: "h-1", Qty: "1" }]]);
    await runJobDef.handle(runJobDef.parse({ runId: completed.runId, attempt: 1 }), jobContext(1));
    const run = await h.ok(ws, "GET", `/pipeline-runs/${completed.runId}`);
    expect(run.status).toBe("delivered");
    expect(await keysUnder(h, `ws/${ws.workspaceId}/spaces/${hosted.connection.id}/outbound/`)).toContain(
      `ws/${ws.workspaceId}/spaces/${hosted.connection.id}/outbound/upload-${up.uploadId}.json`,
    );
  });

  test("a connection that no longer exists is a permanent failure (no retry)", async () => {
    const up = (await startUpload(h, ws, { connectionName: "Hosted", pipelineName: "Hosted out", totalParts: 1 })).body;
    const completed = await uploadAll(h, ws, up.uploadId, [[{ SKU: "g-1", Qty: "1" }]]);
    const row = (await loadRunRow(h.svc, completed.runId))!;
    const e = await deliverRun(h.svc, { ...row, connectionId: "conn_gone", connectionName: "Gone" }, { key: row.originalKey, format: "json" }).catch((err) => err);
    expect(e).toBeInstanceOf(PermanentDeliveryError);
    expect(e.message).toBe("delivery failed: connection 'Gone' (conn_gone) was deleted before the file could be delivered; the processed file is kept with the run");
  });
});
