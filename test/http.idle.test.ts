import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { connect } from "node:net";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { type Instance, secondInstance, within } from "./helpers/instances";
import { pipelineOf } from "./helpers/live";

/**
 * The service as `src/main.ts` serves it: an upload that stalls for longer
 * than Bun.serve's own idle timeout (10 s) is still received, and one that
 * stalls past HTTP_IDLE_TIMEOUT_SECONDS is dropped without a run or a file
 * left behind. Waits ~11 s of real time: the 10 s is Bun's default, not ours.
 */

let h: Harness;
let ws: TestWorkspace;
let pipelineId = "";
let patient: Instance;
let strict: Instance;

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  ws = await h.workspace();
  pipelineId = await pipelineOf(h, ws, "Idle");
  [patient, strict] = await Promise.all([secondInstance(h), secondInstance(h, { HTTP_IDLE_TIMEOUT_SECONDS: "2" })]);
}, 60_000);

afterAll(async () => {
  await Promise.all([patient?.stop(), strict?.stop()]);
  await h.close();
});

/** Every file under the service's DATA_DIR, relative to it. */
const files = () => (readdirSync(h.dataDir, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[]).filter((d) => d.isFile()).map((d) => `${d.parentPath}/${d.name}`.slice(h.dataDir.length + 1));

/**
 * Sends `POST /pipelines/{id}/runs` over a raw socket: the headers and the first half of the multipart body,
 * nothing for `pauseMs`, then the rest. Answers the status line and body, or "closed" when the server hung up first.
 */
function stalledUpload(url: string, pauseMs: number): Promise<{ status: number; body: string } | "closed"> {
  const boundary = "----fps-idle-test";
  const csv = `sku\n${Array.from({ length: 200 }, (_, i) => `SKU-${i}`).join("\n")}\n`;
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="stalled.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
  );
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    let timer: ReturnType<typeof setTimeout> | undefined;
    socket.on("data", (d) => {
      answer += d.toString();
    });
    socket.on("error", () => {}); // a reset shows as "closed" below
    socket.on("close", () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.1 (\d+)[^]*?\r\n\r\n([^]*)$/.exec(answer);
      resolve(m ? { status: Number(m[1]), body: m[2]! } : "closed");
    });
    socket.on("connect", () => {
      socket.write(
        `POST /pipelines/${pipelineId}/runs HTTP/1.1\r\nHost: ${hostname}:${port}\r\nx-api-key: ${ws.apiKey}\r\nservice-version: 2026-05-25\r\n` +
          `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      );
      const half = Math.floor(body.length / 2);
      socket.write(body.subarray(0, half));
      timer = setTimeout(() => {
        // write, not end: Bun takes a client's half-close as the client going away.
        if (!socket.destroyed) socket.write(body.subarray(half));
      }, pauseMs);
    });
    socket.setTimeout(60_000, () => reject(new Error("no answer within 60 s")));
  });
}

test(
  "an upload that stalls 11 s is received and processed; past HTTP_IDLE_TIMEOUT_SECONDS it is dropped and leaves no run",
  async () => {
    const before = (await h.ok(ws, "GET", `/pipeline-runs/pipeline/${pipelineId}`)).pagination.total as number;
    const filesBefore = new Set(files());
    const [slow, cut] = await Promise.all([stalledUpload(patient.url, 11_000), stalledUpload(strict.url, 4_000)]);

    expect(cut).toBe("closed");
    expect(slow).not.toBe("closed");
    const { status, body } = slow as { status: number; body: string };
    expect(status).toBe(200);
    // The body may be chunked: the run is the JSON object in it.
    const run = JSON.parse(body.slice(body.indexOf("{"), body.lastIndexOf("}") + 1)) as { id: string; filename: string };
    expect(run.filename).toBe("stalled.csv");
    await within(30_000, async () => (await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status === "completed");
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).metadata.rows.total).toBe(200);
    // Only the patient upload made a run.
    expect((await h.ok(ws, "GET", `/pipeline-runs/pipeline/${pipelineId}`)).pagination.total).toBe(before + 1);
    // New files: the patient run's (under its own key) and the stores' bookkeeping; nothing of the dropped upload.
    const added = files().filter((f) => !filesBefore.has(f) && !f.includes(".fps/meta/") && !/\.(db|sqlite)(-wal|-shm)?$/.test(f));
    expect(added.length).toBeGreaterThan(0);
    for (const f of added) expect(f).toContain(run.id);
  },
  60_000,
);
