import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useId } from "react";
import { Link, navigate, useLocation } from "../router";
import { trpc } from "../trpc";
import { when } from "../types";
import { ErrorText, Table } from "../ui";
import { connectionsQuery } from "./connections";

const EVENTS = [
  ["PIPELINE_RUN_FAILED", "A run failed"],
  ["PIPELINE_RUN_SUCCEEDED", "A run succeeded"],
] as const;
const CHANNELS = [
  ["EMAIL", "E-mail", "name@example.com"],
  ["SLACK", "Slack", "#ops-alerts or C0123ABCD"],
  ["SMS", "SMS", "+15551234567"],
] as const;

/** Notification preferences of one connection (chosen in the page's address), and the sends of the workspace. */
export function Notifications() {
  const { query } = useLocation();
  const connectionId = query.get("connection") ?? "";
  const connections = useQuery(connectionsQuery);
  const selectId = useId();
  return (
    <section>
      <h1>Notifications</h1>
      <p className="hint">Who hears about a connection's runs, by e-mail, Slack or SMS.</p>
      <label htmlFor={selectId}>Connection</label>{" "}
      <select id={selectId} value={connectionId} onChange={(e) => navigate(e.target.value ? `/setup/notifications?connection=${e.target.value}` : "/setup/notifications", { replace: true })}>
        <option value="">Choose a connection</option>
        {connections.data?.data.map((c) => (
          <option key={c.id} value={c.id}>
            {c.name}
          </option>
        ))}
      </select>
      {connectionId && <Preferences key={connectionId} connectionId={connectionId} />}
      <h2>Sends</h2>
      <Sends connectionId={connectionId || undefined} />
    </section>
  );
}

function Preferences({ connectionId }: { connectionId: string }) {
  const qc = useQueryClient();
  const prefs = useQuery({ queryKey: ["preferences", connectionId], queryFn: () => trpc.notificationPreferences.get.query({ id: connectionId }) });
  const save = useMutation({
    mutationFn: (preferences: unknown[]) => trpc.notificationPreferences.put.mutate({ id: connectionId, data: { preferences } as never }),
    onSuccess: (saved) => qc.setQueryData(["preferences", connectionId], saved),
  });
  const stored = (event: string, channel: string) => prefs.data?.find((p) => p.eventType === event && p.channel === channel);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const items: unknown[] = [];
    for (const [event] of EVENTS) {
      for (const [channel] of CHANNELS) {
        const isEnabled = f.get(`${event}/${channel}/on`) === "on";
        // Pairs never set and left off are not sent: they stay without a preference.
        if (!isEnabled && !stored(event, channel)) continue;
        const recipients = String(f.get(`${event}/${channel}/to`) ?? "")
          .split(/[\n,]/)
          .map((r) => r.trim())
          .filter(Boolean);
        items.push({ eventType: event, channel, isEnabled, recipients });
      }
    }
    if (items.length) save.mutate(items);
  };
  if (prefs.isPending) return <p className="loading">Loading…</p>;
  return (
    <form onSubmit={submit} aria-label="Notification preferences" key={String(prefs.dataUpdatedAt)}>
      <ErrorText error={prefs.error ?? save.error} />
      {EVENTS.map(([event, eventLabel]) => (
        <fieldset key={event} className="prefs">
          <legend>{eventLabel}</legend>
          {CHANNELS.map(([channel, channelLabel, example]) => {
            const p = stored(event, channel);
            return (
              <div key={channel} className="inline">
                <label className="check">
                  <input type="checkbox" name={`${event}/${channel}/on`} defaultChecked={p?.isEnabled ?? false} />
                  {channelLabel}
                </label>
                <label>
                  {channelLabel} recipients
                  <input name={`${event}/${channel}/to`} defaultValue={p?.recipients.join(", ") ?? ""} placeholder={example} />
                </label>
              </div>
            );
          })}
        </fieldset>
      ))}
      <p className="hint">Recipients are comma-separated. Over a channel this service is not set up for, sends are recorded as failed, saying so.</p>
      {save.isSuccess && <p role="status">Preferences saved.</p>}
      <button type="submit" disabled={save.isPending}>
        Save preferences
      </button>
    </form>
  );
}

function Sends({ connectionId }: { connectionId?: string }) {
  const query = { limit: 50, ...(connectionId ? { clientId: connectionId } : {}) };
  const list = useQuery({ queryKey: ["sends", query], queryFn: () => trpc.notificationSends.list.query(query as never) });
  return (
    <section aria-label="Sends">
      <button type="button" className="secondary" onClick={() => list.refetch()}>
        Refresh sends
      </button>
      <ErrorText error={list.error} />
      {list.data?.data.length === 0 && <p>Nothing sent yet.</p>}
      {!!list.data?.data.length && (
        <Table caption="Sends" columns={["When", "Event", "Run", "Channel", "Recipient", "Outcome", "Attempts", "Error"]}>
          {list.data.data.map((s) => (
            <tr key={s.id}>
              <td>{when(s.sentAt ?? s.createdAt)}</td>
              <td>{s.eventType}</td>
              <td>
                <Link href={`/runs/${s.runId}`}>{s.runId}</Link>
              </td>
              <td>{s.channel}</td>
              <td>{s.recipient}</td>
              <td className={`status s-${s.status === "sent" ? "delivered" : s.status}`}>{s.status}</td>
              <td>{s.attempts}</td>
              <td>{s.error ?? ""}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
