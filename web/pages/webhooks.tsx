import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link } from "../router";
import { errorCode, trpc } from "../trpc";
import { when } from "../types";
import { CopyValue, ErrorText, Field, Table } from "../ui";
import { NotFound } from "./not-found";

/** The run events a webhook can receive (the service's list; it checks what is sent). */
export const EVENT_TYPES = ["pipeline_run.completed", "pipeline_run.delivered", "pipeline_run.failed", "pipeline_run.acknowledged"];

/** A signing secret answered once (on creation or rotation), with its copy button. */
function ShownOnce(props: { title: string; secret: string }) {
  return (
    <div role="status" className="shown-once">
      <p>{props.title} It is shown only this once: store it where your receiver checks signatures.</p>
      <dl className="facts">
        <CopyValue label="Signing secret" value={props.secret} />
      </dl>
    </div>
  );
}

export function Webhooks() {
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["webhooks"], queryFn: () => trpc.webhooks.list.query({ limit: 100 } as never) });
  const [secret, setSecret] = useState<{ title: string; secret: string } | null>(null);
  const done = () => qc.invalidateQueries({ queryKey: ["webhooks"] });
  const create = useMutation({
    mutationFn: (input: Record<string, unknown>) => trpc.webhooks.create.mutate(input as never),
    onSuccess: (w) => {
      setSecret({ title: `Webhook ${w.name} created. Its signing secret:`, secret: w.secret });
      done();
    },
  });
  const rotate = useMutation({
    mutationFn: (w: { id: string; name: string }) => trpc.webhooks.rotateSecret.mutate({ id: w.id }),
    onSuccess: (r, w) => setSecret({ title: `The new signing secret of ${w.name} (the old one no longer signs):`, secret: r.secret }),
  });
  const toggle = useMutation({
    mutationFn: (w: { id: string; isActive: boolean }) => trpc.webhooks.update.mutate({ id: w.id, data: { isActive: w.isActive } }),
    onSuccess: done,
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    setSecret(null);
    create.mutate({
      name: String(f.get("name")),
      url: String(f.get("url")),
      eventTypes: f.getAll("event").map(String),
      description: String(f.get("description") ?? "") || null,
    });
  };
  return (
    <section>
      <h1>Webhooks</h1>
      <p className="hint">
        A webhook receives the run events of the pipelines that link it, signed with its secret (Standard Webhooks). Link it from a pipeline's settings.
      </p>
      <form onSubmit={submit} aria-label="New webhook">
        <div className="inline">
          <Field label="Webhook name" name="name" required />
          <Field label="Receiver URL" name="url" type="url" required placeholder="https://example.com/hooks/files" />
        </div>
        <fieldset className="inline">
          <legend>Events</legend>
          {EVENT_TYPES.map((t) => (
            <label key={t} className="check">
              <input type="checkbox" name="event" value={t} defaultChecked />
              {t.replace("pipeline_run.", "run ")}
            </label>
          ))}
        </fieldset>
        <Field label="Webhook description" name="description" />
        <button type="submit" disabled={create.isPending}>
          Create webhook
        </button>
      </form>
      <ErrorText error={create.error ?? rotate.error ?? toggle.error ?? list.error} />
      {secret && <ShownOnce {...secret} />}
      <Table caption="Webhooks" columns={["Name", "URL", "Events", "State", "Actions"]}>
        {list.data?.data.map((w) => (
          <tr key={w.id}>
            <td>
              <Link href={`/setup/webhooks/${w.id}`}>{w.name}</Link>
              {w.kind === "PIPELINE_RUN_EVENT" && <span className="hint"> (automation subscription)</span>}
            </td>
            <td>
              <code>{w.url}</code>
            </td>
            <td>{w.eventTypes.map((t) => t.replace("pipeline_run.", "")).join(", ")}</td>
            <td>{w.isActive ? "active" : "paused"}</td>
            <td className="inline">
              <button type="button" className="small" onClick={() => rotate.mutate(w)}>
                Rotate secret of {w.name}
              </button>
              <button type="button" className="small secondary" onClick={() => toggle.mutate({ id: w.id, isActive: !w.isActive })}>
                {w.isActive ? "Pause" : "Resume"} {w.name}
              </button>
            </td>
          </tr>
        ))}
      </Table>
      {list.data?.data.length === 0 && <p>No webhooks yet.</p>}
      <h2>Recent deliveries</h2>
      <Deliveries />
    </section>
  );
}

/** The deliveries log, each event with its attempt history (newest first), the next retry, and redelivery. */
export function Deliveries(props: { webhookId?: string }) {
  const qc = useQueryClient();
  const query = { limit: 100, ...(props.webhookId ? { webhookId: props.webhookId } : {}) };
  const list = useQuery({ queryKey: ["deliveries", query], queryFn: () => trpc.webhooks.deliveries.query(query as never) });
  const redeliver = useMutation({
    mutationFn: (id: string) => trpc.webhooks.redeliver.mutate({ id }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["deliveries"] }),
  });
  const attempts = list.data?.data ?? [];
  // One line per event and webhook: its latest attempt, with the earlier ones below it.
  const groups = new Map<string, typeof attempts>();
  for (const d of attempts) {
    const key = `${d.webhookId} ${d.eventId}`;
    groups.set(key, [...(groups.get(key) ?? []), d]);
  }
  return (
    <section aria-label="Deliveries">
      <button type="button" className="secondary" onClick={() => list.refetch()}>
        Refresh deliveries
      </button>
      <ErrorText error={list.error ?? redeliver.error} />
      {attempts.length === 0 && list.isSuccess && <p>No deliveries yet: they appear when a linked pipeline's run completes, is delivered, fails or is acknowledged.</p>}
      {attempts.length > 0 && (
        <Table caption="Deliveries" columns={["Event", "Run", "Status", "Response", "Duration", "Attempts", "Next retry", "Redeliver"]}>
          {[...groups.values()].map(([last, ...earlier]) => (
            <tr key={last!.id}>
              <td>{last!.eventType}</td>
              <td>
                <Link href={`/runs/${last!.pipelineRunId}`}>{last!.pipelineRunId}</Link>
              </td>
              <td className={`status ${last!.success ? "s-delivered" : "s-failed"}`}>{last!.success ? "delivered" : "failed"}</td>
              <td>{last!.statusCode ?? last!.error ?? ""}</td>
              <td>{last!.durationMs} ms</td>
              <td>
                <ol reversed className="attempts">
                  {[last!, ...earlier].map((a) => (
                    <li key={a.id}>
                      {when(a.createdAt)}: {a.trigger}, {a.success ? "ok" : "failed"} {a.statusCode ?? ""} {a.error ? `(${a.error})` : ""} in {a.durationMs} ms
                    </li>
                  ))}
                </ol>
              </td>
              <td>{when(last!.nextAttemptAt) || "none"}</td>
              <td>
                <button type="button" className="small" disabled={redeliver.isPending} onClick={() => redeliver.mutate(last!.id)}>
                  Redeliver
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

export function WebhookPage({ id }: { id: string }) {
  const hook = useQuery({ queryKey: ["webhook", id], queryFn: () => trpc.webhooks.get.query({ id }) });
  if (errorCode(hook.error) === "not_found") return <NotFound what="This webhook" />;
  return (
    <section>
      <p>
        <Link href="/setup/webhooks">Webhooks</Link> /
      </p>
      <h1>{hook.data?.name ?? "Webhook"}</h1>
      <ErrorText error={hook.error} />
      {hook.data && (
        <dl className="facts">
          <dt>URL</dt>
          <dd>
            <code>{hook.data.url}</code>
          </dd>
          <dt>Events</dt>
          <dd>{hook.data.eventTypes.join(", ")}</dd>
          <dt>Description</dt>
          <dd>{hook.data.description ?? ""}</dd>
        </dl>
      )}
      <h2>Deliveries</h2>
      <Deliveries webhookId={id} />
    </section>
  );
}
