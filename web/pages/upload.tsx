import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "../router";
import { trpc } from "../trpc";
import { ErrorText, Progress } from "../ui";
import { DropZone } from "./pipeline-ui";

interface Sent {
  name: string;
  progress: number;
  runId?: string;
  error?: string;
}

/**
 * The upload is the REST route POST /pipelines/{id}/runs, sent by XHR for
 * its progress events; it takes the session cookie (with the Origin check)
 * as it takes a key.
 */
function send(pipelineId: string, file: File, onProgress: (f: number) => void): Promise<{ id: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/pipelines/${encodeURIComponent(pipelineId)}/runs`);
    xhr.setRequestHeader("service-version", "2026-05-25");
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      const body = JSON.parse(xhr.responseText || "{}");
      if (xhr.status === 200 || xhr.status === 201) resolve(body);
      else reject(new Error(body.message ?? `upload failed (${xhr.status})`));
    };
    xhr.onerror = () => reject(new Error("the upload was interrupted"));
    const form = new FormData();
    form.append("file", file);
    xhr.send(form);
  });
}

export function Upload() {
  const pipelines = useQuery({ queryKey: ["pipelines"], queryFn: () => trpc.pipelines.list.query({ limit: 100 } as never) });
  const inbound = pipelines.data?.data.filter((p) => p.direction === "inbound") ?? [];
  const [pipelineId, setPipelineId] = useState("");
  const [sent, setSent] = useState<Sent[]>([]);
  const chosen = pipelineId || inbound[0]?.id || "";

  const start = (files: FileList | null) => {
    if (!files || !chosen) return;
    for (const file of Array.from(files)) {
      const index = sent.length;
      const update = (patch: Partial<Sent>) => setSent((all) => all.map((s, i) => (i === index ? { ...s, ...patch } : s)));
      setSent((all) => [...all, { name: file.name, progress: 0 }]);
      send(chosen, file, (progress) => update({ progress }))
        .then((run) => update({ progress: 1, runId: run.id }))
        .catch((e: Error) => update({ error: e.message }));
    }
  };

  return (
    <section>
      <h1>Upload a file</h1>
      <ErrorText error={pipelines.error} />
      {pipelines.isSuccess && inbound.length === 0 && <p>There is no inbound pipeline yet: create one through the API first.</p>}
      <label>
        Pipeline
        <select value={chosen} onChange={(e) => setPipelineId(e.target.value)}>
          {inbound.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <DropZone name="Drop zone" choose="Choose a file" onFiles={start}>
        Drop a file here, or
      </DropZone>
      <ul className="uploads">
        {sent.map((s, i) => (
          <li key={i}>
            {s.name}: <Progress value={s.progress} label={`Upload of ${s.name}`} />{" "}
            {s.error ? (
              <span className="error" role="alert">
                {s.error}
              </span>
            ) : s.runId ? (
              <Link href={`/runs/${s.runId}`}>View run</Link>
            ) : (
              `${Math.round(s.progress * 100)}%`
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
