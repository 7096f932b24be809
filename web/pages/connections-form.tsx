import { type FormEvent, useState } from "react";
import type { Connection } from "../types";
import { Field, TextArea } from "../ui";

export type Kind = "hosted" | "customer" | "email";
export const KIND_LABEL: Record<Kind, string> = { hosted: "Hosted SFTP", customer: "Customer's SFTP server", email: "E-mail inbox" };
/** The attachment formats an EMAIL connection may accept (the service's list; it checks them). */
const FORMATS = ["csv", "tsv", "txt", "json", "ndjson", "xml", "zip", "pgp"];

export function kindOf(c: Pick<Connection, "type" | "useHostedSFTP">): Kind {
  return c.type === "EMAIL" ? "email" : c.useHostedSFTP ? "hosted" : "customer";
}

/** A password for a partner: 24 characters from 18 random bytes (Web Crypto), shown once after saving. */
export function generatePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}

const text = (f: FormData, name: string) => String(f.get(name) ?? "").trim();
const lines = (s: string) =>
  s
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);

/**
 * The input a save sends: members as the API names them, no checks of its
 * own (the service answers what is wrong). Credentials left empty are not
 * sent, so the stored ones stay (they are write-only).
 */
function inputOf(kind: Kind, f: FormData): { input: Record<string, unknown>; password: string | null } {
  const input: Record<string, unknown> = { name: text(f, "name") };
  let password: string | null = null;
  if (kind === "email") {
    input.type = "EMAIL";
    input.emailAllowedFormats = f.getAll("format").map(String);
    const senders = lines(text(f, "senders"));
    input.emailAllowedSenders = senders.length ? senders : null;
    input.emailSubjectFilter = text(f, "subject") || null;
    return { input, password };
  }
  input.type = "SFTP";
  input.useHostedSFTP = kind === "hosted";
  if (text(f, "username")) input.sftpUsername = text(f, "username");
  if (kind === "hosted") {
    const login = text(f, "login");
    if (login === "password") password = generatePassword();
    if (password) input.sftpPassword = password;
    if (login === "key") input.awsPublicKey = text(f, "publicKey");
    return { input, password };
  }
  input.sftpServer = {
    host: text(f, "host"),
    port: Number(text(f, "port") || "22"),
    rootDirectory: text(f, "root") || "/",
    inboundFolder: text(f, "inbound") || "/inbound",
    outboundFolder: text(f, "outbound") || "/outbound",
    processedFolder: text(f, "processed") || null,
  };
  for (const [field, member] of [
    ["password", "sftpPassword"],
    ["privateKey", "sftpPrivateKey"],
    ["passphrase", "sftpPassphrase"],
  ] as const) {
    const v = String(f.get(field) ?? "");
    if (v) input[member] = v;
  }
  return { input, password };
}

/** Create (no `current`) or edit a connection of any kind. */
export function ConnectionForm(props: {
  current?: Connection;
  pending: boolean;
  onSave: (input: Record<string, unknown>, generatedPassword: string | null) => void;
  onCancel?: () => void;
}) {
  const { current } = props;
  const [kind, setKind] = useState<Kind>(current ? kindOf(current) : "hosted");
  const [login, setLogin] = useState(current ? "keep" : "password");
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const { input, password } = inputOf(kind, new FormData(e.currentTarget));
    props.onSave(input, password);
  };
  const server = current?.sftpServer;
  const creds = new Set(current?.credentialsSet ?? []);
  const stored = (member: string) => (creds.has(member as never) ? "Stored; leave empty to keep it" : undefined);
  return (
    <form onSubmit={submit} aria-label={current ? "Edit connection" : "New connection"}>
      <Field label="Connection name" name="name" required defaultValue={current?.name} />
      <label>
        Connection kind
        <select value={kind} onChange={(e) => setKind(e.target.value as Kind)} disabled={current !== undefined}>
          {(Object.keys(KIND_LABEL) as Kind[]).map((k) => (
            <option key={k} value={k}>
              {KIND_LABEL[k]}
            </option>
          ))}
        </select>
      </label>
      {kind === "hosted" && (
        <fieldset>
          <legend>Partner login on this service's SFTP server</legend>
          <Field label="SFTP username" name="username" defaultValue={current?.sftpUsername} placeholder="made from the name when empty" />
          <label>
            Partner logs in with
            <select name="login" value={login} onChange={(e) => setLogin(e.target.value)}>
              {current && <option value="keep">what is stored ({[...creds].join(", ") || "nothing yet"})</option>}
              <option value="password">{current ? "a new generated password" : "a generated password"}</option>
              <option value="key">a public key</option>
            </select>
          </label>
          {login === "key" && <PublicKey current={current?.awsPublicKey} />}
          {login === "password" && <p className="hint">The password is generated when you save and shown once.</p>}
        </fieldset>
      )}
      {kind === "customer" && (
        <fieldset>
          <legend>The customer's server</legend>
          <div className="inline">
            <Field label="Host" name="host" required defaultValue={server?.host} />
            <Field label="Port" name="port" inputMode="numeric" defaultValue={String(server?.port ?? 22)} />
          </div>
          <div className="inline">
            <Field label="Root folder" name="root" defaultValue={server?.rootDirectory ?? "/"} />
            <Field label="Inbound folder" name="inbound" defaultValue={server?.inboundFolder ?? "/inbound"} />
            <Field label="Outbound folder" name="outbound" defaultValue={server?.outboundFolder ?? "/outbound"} />
            <Field label="Processed folder" name="processed" defaultValue={server?.processedFolder} placeholder="leave files in place" />
          </div>
          <Field label="Username on their server" name="username" defaultValue={current?.sftpUsername} />
          <Field label="Password" name="password" type="password" autoComplete="new-password" placeholder={stored("sftpPassword")} />
          <TextArea label="Private key" name="privateKey" rows={3} placeholder={stored("sftpPrivateKey") ?? "-----BEGIN OPENSSH PRIVATE KEY-----"} />
          <Field label="Key passphrase" name="passphrase" type="password" autoComplete="new-password" placeholder={stored("sftpPassphrase")} />
          <p className="hint">
            Host keys are not pinned: the service accepts the key the server presents, and "Test connection" shows its fingerprint so you can compare it with
            the one your customer gives you.
          </p>
        </fieldset>
      )}
      {kind === "email" && (
        <fieldset>
          <legend>Mail rules</legend>
          {current?.emailInbox && <p>Inbound address: <code>{current.emailInbox.inboundAddress}</code></p>}
          <fieldset className="inline">
            <legend>Allowed attachment formats</legend>
            {FORMATS.map((f) => (
              <label key={f} className="check">
                <input type="checkbox" name="format" value={f} defaultChecked={current ? current.emailAllowedFormats?.includes(f) : f === "csv"} />
                {f}
              </label>
            ))}
          </fieldset>
          <TextArea label="Allowed senders (one a line; empty: anyone)" name="senders" rows={3} defaultValue={current?.emailAllowedSenders?.join("\n")} placeholder="orders@partner.com or @partner.com" />
          <Field label="Subject must contain" name="subject" defaultValue={current?.emailSubjectFilter} />
        </fieldset>
      )}
      <div className="actions">
        <button type="submit" disabled={props.pending}>
          {current ? "Save connection" : "Create connection"}
        </button>
        {props.onCancel && (
          <button type="button" className="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** The partner's public key, pasted or read from their `.pub` file. */
function PublicKey(props: { current?: string }) {
  const [key, setKey] = useState(props.current ?? "");
  return (
    <>
      <label>
        Public key file (.pub)
        <input type="file" accept=".pub,text/plain" onChange={(e) => e.target.files?.[0]?.text().then((t) => setKey(t.trim()))} />
      </label>
      <TextArea label="Partner's public key" name="publicKey" rows={3} value={key} onChange={(e) => setKey(e.target.value)} placeholder="ssh-ed25519 AAAA… partner@example.com" />
    </>
  );
}
