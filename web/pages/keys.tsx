import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { trpc } from "../trpc";
import { type Session, when } from "../types";
import { ErrorText, Field } from "../ui";

export function Keys({ session }: { session: Session }) {
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["keys"], queryFn: () => trpc.keys.list.query() });
  const done = () => qc.invalidateQueries({ queryKey: ["keys"] });
  const create = useMutation({ mutationFn: (v: { name: string; role: "admin" | "member" }) => trpc.keys.create.mutate(v), onSuccess: done });
  const revoke = useMutation({ mutationFn: (id: string) => trpc.keys.revoke.mutate({ id }), onSuccess: done });
  const admin = session.role === "admin";
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    create.mutate({ name: String(f.get("name")), role: f.get("role") === "admin" ? "admin" : "member" });
  };
  return (
    <section>
      <h1>API keys</h1>
      {admin && (
        <form onSubmit={submit}>
          <Field label="Key name" name="name" required />
          <label>
            Key role
            <select name="role" defaultValue="member">
              <option value="member">member</option>
              <option value="admin">admin</option>
            </select>
          </label>
          <button type="submit">Create key</button>
        </form>
      )}
      <ErrorText error={create.error ?? revoke.error ?? list.error} />
      {create.data && (
        <div role="status" className="shown-once">
          <p>The new key, shown only this once. Store it now:</p>
          <code className="secret" aria-label="New API key">
            {create.data.apiKey}
          </code>
        </div>
      )}
      <div className="table-wrap">
        <table>
          <caption className="sr-only">API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Starts with</th>
              <th scope="col">Role</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {list.data?.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.start}…</code>
                </td>
                <td>{k.role}</td>
                <td>{when(k.createdAt)}</td>
                <td>{when(k.lastUsedAt) || "never"}</td>
                <td>
                  {k.revokedAt ? (
                    `revoked ${when(k.revokedAt)}`
                  ) : admin ? (
                    <button type="button" onClick={() => revoke.mutate(k.id)}>
                      Revoke {k.name}
                    </button>
                  ) : (
                    "active"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
