import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId } from "react";
import { trpc } from "../trpc";
import type { Session } from "../types";
import { ErrorText } from "../ui";

export function Settings({ session }: { session: Session }) {
  const qc = useQueryClient();
  const ws = useQuery({ queryKey: ["workspace"], queryFn: () => trpc.workspace.get.query() });
  const save = useMutation({
    mutationFn: (version: string | null) => trpc.workspace.setDefaultVersion.mutate({ version }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["workspace"] }),
  });
  const id = useId();
  return (
    <section>
      <h1>Settings</h1>
      <ErrorText error={ws.error ?? save.error} />
      {ws.data && (
        <form onSubmit={(e) => e.preventDefault()}>
          <label htmlFor={id}>Default API version</label>
          <select
            id={id}
            value={ws.data.defaultVersion ?? ""}
            disabled={session.role !== "admin" || save.isPending}
            onChange={(e) => save.mutate(e.target.value || null)}
          >
            <option value="">The service's default</option>
            {ws.data.versions.map((v) => (
              <option key={v}>{v}</option>
            ))}
          </select>
          <p className="hint">Applied to this workspace's requests that send no Service-Version header.</p>
          {save.isSuccess && <p role="status">Saved.</p>}
        </form>
      )}
    </section>
  );
}
