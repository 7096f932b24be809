import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "../router";
import { trpc } from "../trpc";
import type { Connection } from "../types";
import { CopyValue, ErrorText, Table } from "../ui";
import { ConnectionForm, KIND_LABEL, kindOf } from "./connections-form";

export const connectionsQuery = { queryKey: ["connections"], queryFn: () => trpc.connections.list.query({ limit: 100 } as never) };

/** Where a connection's partner sends files: the hosted login, the customer's server, or the inbound address. */
export function endpointOf(c: Connection): string {
  if (c.type === "EMAIL") return c.emailInbox?.inboundAddress ?? "";
  const s = c.sftpServer;
  return s ? `${c.sftpUsername ?? "?"}@${s.host}:${s.port}` : "";
}

/** What a partner needs to log in to a hosted connection, each with a copy button; the generated password only right after saving. */
export function HandOn(props: { connection: Connection; password: string | null }) {
  const c = props.connection;
  if (kindOf(c) !== "hosted" || !c.sftpServer) return null;
  return (
    <div className="shown-once" role="region" aria-label="Partner login">
      <h2>For your partner</h2>
      <dl className="facts">
        <CopyValue label="SFTP host" value={c.sftpServer.host} />
        <CopyValue label="SFTP port" value={String(c.sftpServer.port)} />
        <CopyValue label="SFTP username" value={c.sftpUsername ?? ""} />
        {props.password && <CopyValue label="SFTP password" value={props.password} />}
      </dl>
      {props.password && <p className="hint">The password is shown only this once: it is stored encrypted and never shown again. Hand it on now.</p>}
    </div>
  );
}

export function Connections() {
  const qc = useQueryClient();
  const list = useQuery(connectionsQuery);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ connection: Connection; password: string | null } | null>(null);
  const create = useMutation({
    mutationFn: (v: { input: Record<string, unknown>; password: string | null }) => trpc.connections.create.mutate(v.input as never),
    onSuccess: (connection, v) => {
      setCreated({ connection, password: v.password });
      setCreating(false);
      qc.invalidateQueries({ queryKey: ["connections"] });
    },
  });
  return (
    <section>
      <h1>Connections</h1>
      <p className="hint">Where partners' files come from and go to: this service's SFTP server, a customer's own server, or an e-mail inbox.</p>
      {creating ? (
        <>
          <h2>New connection</h2>
          <ConnectionForm pending={create.isPending} onSave={(input, password) => create.mutate({ input, password })} onCancel={() => setCreating(false)} />
        </>
      ) : (
        <button
          type="button"
          onClick={() => {
            create.reset();
            setCreated(null);
            setCreating(true);
          }}
        >
          New connection
        </button>
      )}
      <ErrorText error={create.error ?? list.error} />
      {created && (
        <div role="status">
          <p>
            Created <Link href={`/setup/connections/${created.connection.id}`}>{created.connection.name}</Link>.
          </p>
          <HandOn connection={created.connection} password={created.password} />
        </div>
      )}
      <Table caption="Connections" columns={["Name", "Kind", "Endpoint", "Credentials stored"]}>
        {list.data?.data.map((c) => (
          <tr key={c.id}>
            <td>
              <Link href={`/setup/connections/${c.id}`}>{c.name}</Link>
            </td>
            <td>{KIND_LABEL[kindOf(c)]}</td>
            <td>
              <code>{endpointOf(c)}</code>
            </td>
            <td>{c.credentialsSet.join(", ") || (c.type === "EMAIL" ? "none needed" : "none")}</td>
          </tr>
        ))}
      </Table>
      {list.data?.data.length === 0 && <p>No connections yet.</p>}
    </section>
  );
}
