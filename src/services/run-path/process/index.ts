/**
 * Process: the `run.process` job (src/jobs/definitions.ts) takes a pending
 * run through three steps, all in process-run.ts:
 * - claim: `pending` → `processing` by a guarded update, so one worker owns
 *   the run (a job retried after a crash finds it `processing` and goes on);
 * - engine: the request built from the pipeline version the run names
 *   (engine-request.ts) runs on the engine's threads while progress.ts
 *   records counts; an outbound run's file is then delivered (delivery/);
 * - finish: `completed`, `delivered` or `failed`, with the run event
 *   enqueued in the same transaction (announce).
 * A job that fails every attempt fails the run (give-up-run.ts).
 */
export { giveUpRun } from "./give-up-run";
export { processRun, type ProcessRunOptions } from "./process-run";
