// An integrator's program, compiled by the tests against the package's built declarations only.
import { createFpsClient, FpsError, verifyWebhook, type PipelineRun } from "@file-pipeline/client";
import { fileBlob, uploadRunFile } from "@file-pipeline/client/node";

export async function nightly(apiKey: string, pipelineId: string, path: string): Promise<PipelineRun> {
  const fps = createFpsClient({ baseUrl: "http://localhost:3000", apiKey, retry: { retries: 5 } });
  const { data: pipeline } = await fps.api.GET("/pipelines/{id}", { params: { path: { id: pipelineId } } });
  console.log(pipeline?.name, pipeline?.direction);
  for await (const run of fps.paginate("/pipeline-runs", { query: { pipelineId, status: "failed" } })) {
    console.log(run.id, run.errorMessage);
  }
  const run = await uploadRunFile(fps, pipelineId, path, { onProgress: (sent, total) => console.log(sent, total) });
  try {
    return await fps.waitForRun(run.id, { timeoutMs: 600_000 });
  } catch (e) {
    if (e instanceof FpsError) console.error(e.statusCode, e.error, e.requestId);
    throw e;
  }
}

export async function upload(fps: ReturnType<typeof createFpsClient>, connectionId: string, path: string) {
  const obj = await fps.uploadDocument(await fileBlob(path), { connectionId, path: "inbound", concurrency: 4 });
  return obj.path;
}

export function receive(secret: string, body: string, headers: Headers) {
  const event = verifyWebhook(secret, body, headers);
  return event.type;
}
