import { useQuery } from "@tanstack/react-query";
import type { ReactElement } from "react";
import { Link } from "../router";
import { trpc } from "../trpc";
import { ErrorText, Table } from "../ui";
import { DocumentsPage } from "./documents";
import { PipelineEditor } from "./pipeline-editor";

/** The pages this file's part of the dashboard answers, or null for another path. */
export function pipelinePage(path: string): ReactElement | null {
  if (path === "/setup/pipelines") return <PipelinesList />;
  if (path === "/setup/pipelines/new") return <PipelineEditor />;
  const one = /^\/setup\/pipelines\/([^/]+)$/.exec(path);
  if (one) return <PipelineEditor id={decodeURIComponent(one[1]!)} />;
  if (path === "/setup/documents") return <DocumentsPage />;
  return null;
}

function PipelinesList() {
  const pipelines = useQuery({ queryKey: ["pipelines", "all"], queryFn: () => trpc.pipelines.list.query({ limit: 100 } as never) });
  const connections = useQuery({ queryKey: ["connections", "all"], queryFn: () => trpc.connections.list.query({ limit: 100 } as never) });
  const names = new Map(connections.data?.data.map((c) => [c.id, c.name]) ?? []);
  return (
    <section>
      <h1>Pipelines</h1>
      <p>
        <Link href="/setup/pipelines/new">New pipeline</Link>
      </p>
      <ErrorText error={pipelines.error} />
      {pipelines.isSuccess && pipelines.data.data.length === 0 && <p>No pipelines yet.</p>}
      <Table caption="Pipelines" columns={["Name", "Direction", "Connection", "Fields mapped", "Active", "Webhooks"]}>
        {pipelines.data?.data.map((p) => (
          <tr key={p.id}>
            <td>
              <Link href={`/setup/pipelines/${p.id}`}>{p.name}</Link>
            </td>
            <td>{p.direction}</td>
            <td>{names.get(p.clientId) ?? p.clientId}</td>
            <td>{p.mappings.fieldMappings.length}</td>
            <td>{p.isActive ? "yes" : "paused"}</td>
            <td>
              {p.webhooks?.map((w, i) => (
                <span key={w.id}>
                  {i > 0 ? ", " : ""}
                  <Link href={`/setup/webhooks/${w.id}`}>{w.name}</Link>
                </span>
              ))}
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
