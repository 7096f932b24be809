import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { progressOf, useLiveRuns } from "../live";
import { Link } from "../router";
import { trpc } from "../trpc";
import { type Run, when } from "../types";
import { ErrorText, Progress } from "../ui";

const STATUSES = ["pending", "processing", "completed", "delivered", "failed", "acknowledged"];
const PAGE_SIZE = 50;

interface Filters {
  pipelineId: string;
  clientId: string;
  status: string;
  direction: string;
  from: string;
  to: string;
}

const EMPTY: Filters = { pipelineId: "", clientId: "", status: "", direction: "", from: "", to: "" };

/** The console's first page, unfiltered: asked for at start-up together with the session (one batched request). */
export const firstRunsPage = {
  queryKey: ["runs", {}, 1],
  queryFn: () => trpc.runs.list.query({ page: 1, limit: PAGE_SIZE } as never),
};

export function RunsConsole() {
  const live = useLiveRuns();
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [page, setPage] = useState(1);
  const query = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== ""));
  const runs = useQuery({
    queryKey: ["runs", query, page],
    queryFn: () => trpc.runs.list.query({ ...query, page, limit: PAGE_SIZE } as never) as ReturnType<typeof firstRunsPage.queryFn>,
    placeholderData: keepPreviousData,
    // The page asked for at start-up is not asked for again on mount; live updates invalidate it when runs change.
    staleTime: 5_000,
  });
  const pipelines = useQuery({ queryKey: ["pipelines"], queryFn: () => trpc.pipelines.list.query({ limit: 100 } as never) });
  const connections = useQuery({ queryKey: ["connections"], queryFn: () => trpc.connections.list.query({ limit: 100 } as never) });
  const set = (k: keyof Filters) => (e: { target: { value: string } }) => {
    setFilters({ ...filters, [k]: e.target.value });
    setPage(1);
  };
  const totalPages = runs.data?.pagination.totalPages ?? 1;
  return (
    <section>
      <h1>Runs</h1>
      <p className="live" role="status" aria-live="polite">
        {live === "live" ? "Live: new runs and changes appear as they happen." : live === "connecting" ? "Connecting to live updates…" : "Live updates are offline; retrying."}
      </p>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Pipeline
          <select value={filters.pipelineId} onChange={set("pipelineId")}>
            <option value="">All</option>
            {pipelines.data?.data.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Connection
          <select value={filters.clientId} onChange={set("clientId")}>
            <option value="">All</option>
            {connections.data?.data.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={filters.status} onChange={set("status")}>
            <option value="">All</option>
            {STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Direction
          <select value={filters.direction} onChange={set("direction")}>
            <option value="">Both</option>
            <option>inbound</option>
            <option>outbound</option>
          </select>
        </label>
        <label>
          From
          <input type="date" value={filters.from} onChange={set("from")} />
        </label>
        <label>
          To
          <input type="date" value={filters.to} onChange={set("to")} />
        </label>
        <button type="button" onClick={() => setFilters(EMPTY)}>
          Clear filters
        </button>
      </form>
      <ErrorText error={runs.error} />
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Status</th>
              <th scope="col">Pipeline</th>
              <th scope="col">Connection</th>
              <th scope="col">Rows</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {runs.data?.data.map((r) => (
              <RunRow key={r.id} run={r as unknown as Run} />
            ))}
          </tbody>
        </table>
      </div>
      {runs.data && runs.data.data.length === 0 && <p>No runs match.</p>}
      <div className="pager">
        <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
          Previous page
        </button>
        <span>
          Page {page} of {Math.max(1, totalPages)} ({runs.data?.pagination.total ?? 0} runs)
        </span>
        <button type="button" disabled={page >= totalPages} onClick={() => setPage(page + 1)}>
          Next page
        </button>
      </div>
    </section>
  );
}

function RunRow({ run }: { run: Run }) {
  const rows = run.metadata.rows as { total?: number; invalid?: number } | undefined;
  const progress = run.status === "processing" ? progressOf(run.metadata) : null;
  return (
    <tr>
      <td>
        <Link href={`/runs/${run.id}`}>{run.filename}</Link>
      </td>
      <td>
        <span className={`status s-${run.status}`}>{run.status}</span>
        {progress !== null && <Progress value={progress} label={`Progress of ${run.filename}`} />}
      </td>
      <td>{run.pipelineName}</td>
      <td>{run.client.name}</td>
      <td>{rows ? `${rows.total ?? 0} (${rows.invalid ?? 0} invalid)` : ""}</td>
      <td>{when(run.createdAt)}</td>
    </tr>
  );
}
