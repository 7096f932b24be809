import type { Harness, Reply, TestWorkspace } from "./harness";

/** The sample form, in process. */
export async function postSample(h: Harness, ws: TestWorkspace, path: string, file: { name: string; content: string | Uint8Array } | null, fields: Record<string, string> = {}): Promise<Reply> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("file", new Blob([file.content as BlobPart]), file.name);
  const res = await h.service.http.handle(
    new Request(`http://localhost${path}`, { method: "POST", headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" }, body: form }),
  );
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, headers: res.headers, body };
}

