import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, navigate } from "../router";
import { errorCode, trpc } from "../trpc";
import { type Connection, when } from "../types";
import { ErrorText, Table } from "../ui";
import { endpointOf, HandOn } from "./connections";
import { ConnectionForm, KIND_LABEL, kindOf } from "./connections-form";
import { NotFound } from "./not-found";

export function ConnectionPage({ id }: { id: string }) {
  const qc = useQueryClient();
  const conn = useQuery({ queryKey: ["connection", id], queryFn: () => trpc.connections.get.query({ id }) });
  const [editing, setEditing] = useState(false);
  const [password, setPassword] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (v: { input: Record<string, unknown>; password: string | null }) => trpc.connections.update.mutate({ id, data: v.input as never }),
    onSuccess: (c, v) => {
      qc.setQueryData(["connection", id], c);
      qc.invalidateQueries({ queryKey: ["connections"] });
      setPassword(v.password);
      setEditing(false);
    },
  });
  if (conn.isPending) return <p className="loading">Loading…</p>;
  if (errorCode(conn.error) === "not_found") return <NotFound what="This connection" />;
  if (!conn.data) return <ErrorText error={conn.error} />;
  const c = conn.data;
  return (
    <section>
      <p>
        <Link href="/setup/connections">Connections</Link> /
      </p>
      <h1>{c.name}</h1>
      <dl className="facts">
        <dt>Kind</dt>
        <dd>{KIND_LABEL[kindOf(c)]}</dd>
        <dt>Endpoint</dt>
        <dd>
          <code>{endpointOf(c)}</code>
        </dd>
        {c.sftpServer && !c.sftpServer.hosted && (
          <>
            <dt>Folders</dt>
            <dd>
              root {c.sftpServer.rootDirectory}, inbound {c.sftpServer.inboundFolder}, outbound {c.sftpServer.outboundFolder}
              {c.sftpServer.processedFolder ? `, processed ${c.sftpServer.processedFolder}` : ""}
            </dd>
          </>
        )}
        {c.type === "EMAIL" && (
          <>
            <dt>Formats</dt>
            <dd>{c.emailAllowedFormats?.join(", ")}</dd>
            <dt>Senders</dt>
            <dd>{c.emailAllowedSenders?.join(", ") ?? "anyone"}</dd>
            <dt>Subject filter</dt>
            <dd>{c.emailSubjectFilter ?? "none"}</dd>
          </>
        )}
        <dt>Credentials stored</dt>
        <dd>{c.credentialsSet.join(", ") || "none"} (write-only: never shown)</dd>
        <dt>Updated</dt>
        <dd>{when(c.updatedAt)}</dd>
      </dl>
      <HandOn connection={c} password={password} />
      <ErrorText error={save.error} />
      {editing ? (
        <ConnectionForm current={c} pending={save.isPending} onSave={(input, pw) => save.mutate({ input, password: pw })} onCancel={() => setEditing(false)} />
      ) : (
        <div className="actions">
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
          <Link href={`/setup/notifications?connection=${c.id}`}>Notification preferences</Link>
        </div>
      )}
      <TestConnection id={id} />
      <DeleteConnection connection={c} />
      <Arrivals id={id} />
    </section>
  );
}

function TestConnection({ id }: { id: string }) {
  const test = useMutation({ mutationFn: () => trpc.connections.test.mutate({ id }) });
  return (
    <section aria-label="Test connection">
      <h2>Test connection</h2>
      <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? "Testing…" : "Test connection"}
      </button>
      <ErrorText error={test.error} />
      {test.data && (
        <>
          <p role="status" className={test.data.ok ? "s-completed" : "s-failed"}>
            {test.data.ok ? "Every check passed." : "A check failed."}
          </p>
          <Table caption="Checks" columns={["Check", "Result", "Time", "Details"]}>
            {test.data.checks.map((k) => (
              <tr key={k.name}>
                <td>{k.name.replace(/_/g, " ")}</td>
                <td className={`status s-${k.status === "passed" ? "completed" : k.status === "failed" ? "failed" : "skipped"}`}>{k.status}</td>
                <td>{k.durationMs === undefined ? "" : `${k.durationMs} ms`}</td>
                <td>{k.message}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}

/** What deleting takes with it, as the service does it; refused (and said so) while pipelines use the connection. */
function DeleteConnection({ connection: c }: { connection: Connection }) {
  const qc = useQueryClient();
  const [asking, setAsking] = useState(false);
  const users = useQuery({
    queryKey: ["pipelines", { connectionId: c.id }],
    queryFn: () => trpc.pipelines.list.query({ connectionId: c.id, limit: 100 } as never),
    enabled: asking,
  });
  const remove = useMutation({
    mutationFn: () => trpc.connections.delete.mutate({ id: c.id }),
    onSuccess: () => {
      // Dropped, not just marked stale: the list must not show the deleted connection while it refetches.
      qc.removeQueries({ queryKey: ["connections"] });
      navigate("/setup/connections");
    },
  });
  const kind = kindOf(c);
  const bound = users.data?.data ?? [];
  return (
    <section aria-label="Delete connection">
      <h2>Delete</h2>
      {!asking ? (
        <button type="button" className="danger" onClick={() => setAsking(true)}>
          Delete connection
        </button>
      ) : (
        <div role="alertdialog" aria-label={`Delete ${c.name}?`} className="confirm">
          <p>
            <strong>Delete {c.name}?</strong> With it go:
          </p>
          <ul>
            {kind === "hosted" && <li>the SFTP login '{c.sftpUsername}': your partner can no longer log in or send files;</li>}
            {kind === "customer" && <li>its stored credentials, and the server record when no other connection uses it: polling and deliveries stop;</li>}
            {kind === "email" && <li>the inbound address {c.emailInbox?.inboundAddress}: mail sent to it is refused;</li>}
            <li>its notification preferences.</li>
          </ul>
          <p className="hint">Its past runs and arrivals stay in the history.</p>
          {bound.length > 0 && (
            <p className="error">
              Pipelines use it and must be deleted or moved first: {bound.map((p) => p.name).join(", ")}.
            </p>
          )}
          <div className="actions">
            <button type="button" className="danger" disabled={remove.isPending || users.isPending || bound.length > 0} onClick={() => remove.mutate()}>
              Delete {c.name} for good
            </button>
            {/* Focus lands on the safe choice when the question appears. */}
            <button type="button" className="secondary" autoFocus onClick={() => setAsking(false)}>
              Keep it
            </button>
          </div>
          <ErrorText error={remove.error} />
        </div>
      )}
    </section>
  );
}

function Arrivals({ id }: { id: string }) {
  const list = useQuery({ queryKey: ["arrivals", id], queryFn: () => trpc.arrivals.list.query({ connectionId: id, limit: 20 } as never) });
  return (
    <section aria-label="Recent arrivals">
      <h2>Recent arrivals</h2>
      <button type="button" className="secondary" onClick={() => list.refetch()}>
        Refresh
      </button>
      <ErrorText error={list.error} />
      {list.data?.data.length === 0 && <p>Nothing has arrived yet.</p>}
      {!!list.data?.data.length && (
        <Table caption="Arrivals" columns={["When", "File", "By", "Outcome", "Reason", "Runs"]}>
          {list.data.data.map((a) => (
            <tr key={a.id}>
              <td>{when(a.createdAt)}</td>
              <td>{a.filename ?? a.path ?? "(whole message)"}</td>
              <td>{a.transport}</td>
              <td className={`status s-${a.outcome === "rejected" ? "failed" : a.outcome === "started" ? "completed" : "skipped"}`}>{a.outcome}</td>
              <td>{a.reason ?? ""}</td>
              <td>
                {a.runIds.map((r) => (
                  <Link key={r} href={`/runs/${r}`}>
                    {r}
                  </Link>
                ))}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
