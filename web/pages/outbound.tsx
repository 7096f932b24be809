import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link } from "../router";
import { trpc } from "../trpc";
import { when } from "../types";
import { ErrorText, Field, Table } from "../ui";
import { connectionsQuery } from "./connections";
import { sampleOf } from "./schemas-editor";

/** Outbound: send a JSON or CSV file through an outbound pipeline, and the upload sessions with their state and delivered file. */
export function Outbound() {
  const qc = useQueryClient();
  const pipelines = useQuery({
    queryKey: ["pipelines", { direction: "outbound" }],
    queryFn: () => trpc.pipelines.list.query({ direction: "outbound", limit: 100 } as never),
  });
  const connections = useQuery(connectionsQuery);
  const nameOf = (id: string) => connections.data?.data.find((c) => c.id === id)?.name ?? "";
  const [file, setFile] = useState<File | null>(null);
  const send = useMutation({
    mutationFn: async (v: { pipelineId: string; outputFilename: string }) => {
      const p = pipelines.data?.data.find((x) => x.id === v.pipelineId);
      if (!file || !p) throw new Error("Choose an outbound pipeline and a file first.");
      return trpc.outbound.sendFile.mutate({
        connectionName: nameOf(p.clientId),
        pipelineName: p.name,
        file: await sampleOf(file),
        ...(v.outputFilename ? { outputFilename: v.outputFilename } : {}),
      });
    },
    onSuccess: () => qc.invalidateQueries({ queryKey: ["outbound"] }),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    send.mutate({ pipelineId: String(f.get("pipeline")), outputFilename: String(f.get("outputFilename") ?? "").trim() });
  };
  const outbound = pipelines.data?.data ?? [];
  return (
    <section>
      <h1>Outbound</h1>
      <p className="hint">
        Rows you send go through an outbound pipeline (mapped, validated, written as CSV, JSON or XML) and are delivered to its connection's outbound folder.
      </p>
      <form onSubmit={submit} aria-label="Send a file">
        <h2>Send a file</h2>
        {pipelines.isSuccess && outbound.length === 0 && <p>No outbound pipeline yet: create one with direction outbound first.</p>}
        <div className="inline">
          <label>
            Outbound pipeline
            <select name="pipeline" required>
              {outbound.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name} ({nameOf(p.clientId)})
                </option>
              ))}
            </select>
          </label>
          <label>
            JSON or CSV file
            <input type="file" accept=".json,.csv,.tsv,.ndjson" required onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
          </label>
          <Field label="Delivered file name (optional)" name="outputFilename" placeholder="from the file's name" />
        </div>
        <button type="submit" disabled={send.isPending || outbound.length === 0}>
          {send.isPending ? "Sending…" : "Send file"}
        </button>
      </form>
      <ErrorText error={send.error ?? pipelines.error} />
      {send.data && (
        <p role="status">
          Sent: <Link href={`/runs/${send.data.runId}`}>run {send.data.runId}</Link> delivers {send.data.outputFilename} ({send.data.outputFormat}).
        </p>
      )}
      <h2>Upload sessions</h2>
      <Sessions />
    </section>
  );
}

function Sessions() {
  const list = useQuery({ queryKey: ["outbound", "sessions"], queryFn: () => trpc.outbound.list.query({ limit: 50 } as never) });
  return (
    <section aria-label="Upload sessions">
      <button type="button" className="secondary" onClick={() => list.refetch()}>
        Refresh sessions
      </button>
      <ErrorText error={list.error} />
      {list.data?.data.length === 0 && <p>No upload sessions yet.</p>}
      {!!list.data?.data.length && (
        <Table caption="Upload sessions" columns={["Started", "Pipeline", "Connection", "State", "Parts", "Delivered file"]}>
          {list.data.data.map((u) => (
            <tr key={u.uploadId}>
              <td>{when(u.createdAt)}</td>
              <td>{u.pipelineName}</td>
              <td>{u.connectionName}</td>
              <td className={`status s-${u.status}`}>
                {u.status}
                {u.errorMessage ? `: ${u.errorMessage}` : u.status === "initiated" ? ` (expires ${when(u.expiresAt)})` : ""}
              </td>
              <td>
                {u.partsReceived} of {u.totalParts}
              </td>
              <td>{u.runId ? <Delivered runId={u.runId} name={u.outputFilename} /> : u.outputFilename}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

/** The delivered file of a completed session: its run's state, and the processed file once written. */
function Delivered(props: { runId: string; name: string }) {
  // Followed until the run ends: delivery comes after processing.
  const run = useQuery({
    queryKey: ["run", props.runId],
    queryFn: () => trpc.runs.get.query({ id: props.runId }),
    refetchInterval: (q) => (["pending", "processing", "completed"].includes(q.state.data?.status ?? "pending") ? 1000 : false),
  });
  const link = useMutation({
    mutationFn: () => trpc.files.link.query({ id: props.runId, which: "processed" }),
    onSuccess: (l) => window.location.assign(l.url),
  });
  const status = run.data?.status;
  const written = status === "completed" || status === "delivered" || status === "acknowledged";
  return (
    <>
      <Link href={`/runs/${props.runId}`}>{props.name}</Link> <span className={`status s-${status}`}>{status ?? ""}</span>{" "}
      {written && (
        <button type="button" className="small secondary" onClick={() => link.mutate()}>
          Download {props.name}
        </button>
      )}
      <ErrorText error={link.error} />
    </>
  );
}
