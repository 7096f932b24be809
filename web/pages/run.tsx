import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { progressOf, useLiveRuns } from "../live";
import { errorCode, trpc } from "../trpc";
import { type Run, when } from "../types";
import { ErrorText, Field, Progress } from "../ui";
import { NotFound } from "./not-found";

const ERRORS_PER_PAGE = 20;

export function RunPage({ id }: { id: string }) {
  useLiveRuns();
  const qc = useQueryClient();
  const run = useQuery({ queryKey: ["run", id], queryFn: () => trpc.runs.get.query({ id }) as Promise<unknown> as Promise<Run> });
  const refresh = (r: unknown) => {
    qc.setQueryData(["run", id], r);
    qc.invalidateQueries({ queryKey: ["runs"] });
  };
  const ack = useMutation({ mutationFn: () => trpc.runs.acknowledge.mutate({ id }), onSuccess: refresh });
  const retry = useMutation({ mutationFn: () => trpc.runs.retry.mutate({ id }), onSuccess: refresh });
  if (run.isPending) return <p className="loading">Loading…</p>;
  if (errorCode(run.error) === "not_found") return <NotFound what={`Run ${id}`} />;
  if (!run.data) return <ErrorText error={run.error} />;
  const r = run.data;
  const m = r.metadata as Record<string, any>;
  const rows = (m.rows ?? {}) as Record<string, number>;
  const progress = r.status === "processing" ? progressOf(m) : null;
  const format = m.input?.format ?? m.input?.detectedFormat ?? m.format;
  return (
    <section>
      <h1>{r.filename}</h1>
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <span className={`status s-${r.status}`} role="status" aria-label="Run status">
            {r.status}
          </span>
          {progress !== null && <Progress value={progress} label="Processing progress" />}
        </dd>
        <dt>Pipeline</dt>
        <dd>{r.pipelineName}</dd>
        <dt>Connection</dt>
        <dd>{r.client.name}</dd>
        <dt>Detected format</dt>
        <dd>{format ? String(format) : "not detected yet"}</dd>
        <dt>Size</dt>
        <dd>{r.size} bytes</dd>
      </dl>
      <h2>Timeline</h2>
      <ol className="timeline">
        <li>Received {when(r.createdAt)}</li>
        {r.processedAt && (
          <li>
            Processing ended {when(r.processedAt)} ({r.status})
          </li>
        )}
        {r.status !== "pending" && !r.processedAt && <li>Now {r.status}</li>}
      </ol>
      {r.errorMessage && (
        <p className="error" role="alert">
          {r.errorMessage}
        </p>
      )}
      <h2>Rows</h2>
      <table className="counts">
        <tbody>
          {["total", "valid", "invalid", "skipped", "quarantined"].map((k) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td>{rows[k] ?? 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="actions">
        <button type="button" onClick={() => ack.mutate()} disabled={r.status !== "completed" && r.status !== "delivered"}>
          Acknowledge
        </button>
        <button type="button" onClick={() => retry.mutate()} disabled={r.status !== "failed"}>
          Retry
        </button>
      </div>
      <ErrorText error={ack.error ?? retry.error} />
      <Downloads run={r} />
      <RowErrors errors={(m.errors ?? []) as { inputRow: number; field?: string; message: string }[]} invalid={rows.invalid ?? 0} />
      <Search runId={r.id} />
      <Delta run={r} />
    </section>
  );
}

function Downloads({ run }: { run: Run }) {
  const link = useMutation({
    mutationFn: (which: "original" | "processed" | "rejects") => trpc.files.link.query({ id: run.id, which }),
    onSuccess: (l) => {
      window.location.assign(l.url);
    },
  });
  const done = run.status === "completed" || run.status === "delivered" || run.status === "acknowledged";
  const rejected = ((run.metadata as { rejects?: { rows?: number } } | null)?.rejects?.rows ?? 0) > 0;
  return (
    <>
      <h2>Downloads</h2>
      <div className="actions">
        <button type="button" onClick={() => link.mutate("original")}>
          Download original
        </button>
        <button type="button" onClick={() => link.mutate("processed")} disabled={!done}>
          Download processed
        </button>
        <button type="button" onClick={() => link.mutate("rejects")} disabled={!done || !rejected}>
          Download rejected rows
        </button>
      </div>
      <p className="hint">
        {rejected
          ? "The rejected rows file lists each skipped or quarantined row with its input row number, its errors and its values as read: fix them and send them again."
          : "This run rejected no row."}
      </p>
      <ErrorText error={link.error} />
    </>
  );
}

function RowErrors({ errors, invalid }: { errors: { inputRow: number; field?: string; message: string }[]; invalid: number }) {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(errors.length / ERRORS_PER_PAGE));
  const shown = errors.slice(page * ERRORS_PER_PAGE, (page + 1) * ERRORS_PER_PAGE);
  return (
    <>
      <h2>Row errors</h2>
      {errors.length === 0 ? (
        <p>No row errors.</p>
      ) : (
        <>
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Row errors</caption>
              <thead>
                <tr>
                  <th scope="col">Input row</th>
                  <th scope="col">Field</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((e, i) => (
                  <tr key={`${e.inputRow}-${i}`}>
                    <td>{e.inputRow}</td>
                    <td>{e.field ?? ""}</td>
                    <td>{e.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="hint">Rows are numbered from 1, the header row not counted. {invalid > errors.length ? `The first ${errors.length} of ${invalid} invalid rows are kept.` : ""}</p>
          {pages > 1 && (
            <div className="pager">
              <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
                Previous errors
              </button>
              <span>
                {page + 1} / {pages}
              </span>
              <button type="button" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
                Next errors
              </button>
            </div>
          )}
        </>
      )}
    </>
  );
}

function Search({ runId }: { runId: string }) {
  const search = useMutation({ mutationFn: (term: string) => trpc.files.search.query({ pipelineRunIds: [runId], searchTerm: term, limit: 50 }) });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    search.mutate(String(new FormData(e.currentTarget).get("term") ?? ""));
  };
  const hits = search.data?.results ?? [];
  const cols = [...new Set(hits.flatMap((h) => Object.keys(h.rowData)))];
  return (
    <>
      <h2>Search rows</h2>
      <form className="inline" onSubmit={submit} role="search">
        <Field label="Value to find" name="term" />
        <button type="submit">Search</button>
      </form>
      <ErrorText error={search.error} />
      {search.data && (
        <>
          <p role="status">
            {search.data.pagination.total} matching row{search.data.pagination.total === 1 ? "" : "s"}
          </p>
          {hits.length > 0 && (
            <div className="table-wrap">
              <table>
                <caption className="sr-only">Matching rows</caption>
                <thead>
                  <tr>
                    {cols.map((c) => (
                      <th scope="col" key={c}>
                        {c}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {hits.map((h, i) => (
                    <tr key={i}>
                      {cols.map((c) => (
                        <td key={c}>{String(h.rowData[c] ?? "")}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}

/** Rows added and removed since the pipeline's previous run. */
function Delta({ run }: { run: Run }) {
  const previous = useQuery({
    queryKey: ["runs", "previous", run.id],
    queryFn: async () => {
      const list = await trpc.runs.listByPipeline.query({ pipelineId: run.pipelineId, limit: 100 } as never);
      const older = list.data.filter((x) => new Date(x.createdAt as unknown as string) < new Date(run.createdAt as unknown as string));
      return older[0] ?? null;
    },
  });
  const base = previous.data;
  const delta = useQuery({
    queryKey: ["delta", base?.id, run.id],
    enabled: Boolean(base) && run.status !== "pending" && run.status !== "processing",
    queryFn: () => trpc.runs.delta.query({ baseRunId: base!.id, compareRunId: run.id, limit: 50 }),
  });
  return (
    <>
      <h2>Changes since the previous run</h2>
      {previous.isSuccess && !base && <p>This is the pipeline's first run.</p>}
      {base && <p>Compared with {base.filename} ({when(base.createdAt)}).</p>}
      <ErrorText error={delta.error} />
      {delta.data && (
        <>
          <p>
            {delta.data.summary.added} added, {delta.data.summary.removed} removed, {delta.data.summary.unchanged} unchanged.
          </p>
          <ul className="delta">
            {delta.data.changes.map((c, i) => (
              <li key={i} className={c.type}>
                {c.type === "added" ? "+ " : "− "}
                {JSON.stringify(c.record)}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
