import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { trpc } from "../trpc";
import { type Session, when } from "../types";
import { ErrorText, Field } from "../ui";

export function Members({ session }: { session: Session }) {
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["members"], queryFn: () => trpc.members.list.query() });
  const done = () => qc.invalidateQueries({ queryKey: ["members"] });
  const invite = useMutation({ mutationFn: (v: { email: string; role: "admin" | "member" }) => trpc.members.invite.mutate(v), onSuccess: done });
  const remove = useMutation({ mutationFn: (userId: string) => trpc.members.remove.mutate({ userId }), onSuccess: done });
  const withdraw = useMutation({ mutationFn: (id: string) => trpc.members.revokeInvite.mutate({ id }), onSuccess: done });
  const admin = session.role === "admin";
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    invite.mutate({ email: String(f.get("email")), role: f.get("role") === "admin" ? "admin" : "member" });
  };
  return (
    <section>
      <h1>Members</h1>
      <ErrorText error={list.error ?? remove.error ?? withdraw.error} />
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Members</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              {admin && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {list.data?.members.map((m) => (
              <tr key={m.userId}>
                <td>{m.name}</td>
                <td>{m.email}</td>
                <td>{m.role}</td>
                <td>{when(m.joinedAt)}</td>
                {admin && (
                  <td>
                    {m.userId !== session.person.id && (
                      <button type="button" onClick={() => remove.mutate(m.userId)}>
                        Remove {m.name}
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.data && list.data.invitations.length > 0 && (
        <>
          <h2>Open invitations</h2>
          <ul>
            {list.data.invitations.map((i) => (
              <li key={i.id}>
                {i.email} as {i.role}, until {when(i.expiresAt)}{" "}
                {admin && (
                  <button type="button" onClick={() => withdraw.mutate(i.id)}>
                    Withdraw
                  </button>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      {admin ? (
        <>
          <h2>Invite a person</h2>
          <form onSubmit={submit}>
            <Field label="E-mail to invite" name="email" type="email" required />
            <label>
              Role
              <select name="role" defaultValue="member">
                <option value="member">member</option>
                <option value="admin">admin</option>
              </select>
            </label>
            <button type="submit">Invite</button>
          </form>
          <ErrorText error={invite.error} />
          {invite.data && (
            <p role="status">
              {invite.data.mailed ? `An invitation was mailed to ${invite.data.invitation.email}.` : "This service sends no mail: hand this link on (shown once): "}
              {invite.data.url && <code className="secret">{invite.data.url}</code>}
            </p>
          )}
        </>
      ) : (
        <p>Only admins invite and remove members.</p>
      )}
    </section>
  );
}
