import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { errorMessage, trpc } from "../trpc";
import { when } from "../types";
import { ErrorText, Field, Progress, Table } from "../ui";
import { type UploadJob, uploadDocument } from "./documents-upload";
import { Choice, DropZone } from "./pipeline-ui";

interface Sending {
  name: string;
  progress: number;
  state: "sending" | "done" | "failed" | "aborted";
  error?: string;
  job: UploadJob;
}

type Entry = Awaited<ReturnType<typeof trpc.documents.list.query>>["entries"][number];

const size = (n?: number) => (n === undefined ? "" : n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 ** 2).toFixed(1)} MB`);

/**
 * A connection's folders: browse, upload by drag and drop (presigned; large
 * files in parts) with progress and abort, download, make folders, rename,
 * move and delete, one at a time or selected together. Pipeline folders are
 * marked; changing them needs `force`, offered to admins only.
 */
export function DocumentsPage() {
  const qc = useQueryClient();
  const me = useQuery({ queryKey: ["me"], queryFn: () => trpc.account.session.query() });
  const isAdmin = me.data?.role === "admin";
  const connections = useQuery({ queryKey: ["connections", "all"], queryFn: () => trpc.connections.list.query({ limit: 100 } as never) });
  const [connectionId, setConnectionId] = useState("");
  const conn = connectionId || connections.data?.data[0]?.id || "";
  const [path, setPath] = useState("");
  const [force, setForce] = useState(false);
  const [selected, setSelected] = useState<string[]>([]);
  const [sending, setSending] = useState<Sending[]>([]);
  const [notice, setNotice] = useState("");
  const forceId = useId();

  const listKey = ["documents", conn, path];
  const listing = useQuery({ queryKey: listKey, queryFn: () => trpc.documents.list.query({ connectionId: conn, path, limit: 1000 }), enabled: !!conn });
  const refresh = () => qc.invalidateQueries({ queryKey: ["documents", conn] });
  const open = (p: string) => {
    setPath(p);
    setSelected([]);
    setNotice("");
  };

  const change = useMutation({
    mutationFn: (f: () => Promise<unknown>) => f(),
    onSuccess: () => {
      setSelected([]);
      refresh();
    },
  });

  const start = (files: FileList | null) => {
    if (!files || !conn) return;
    for (const file of Array.from(files)) {
      const folder = path;
      setSending((all) => {
        const index = all.length;
        const update = (patch: Partial<Sending>) => setSending((now) => now.map((s, i) => (i === index ? { ...s, ...patch } : s)));
        const job = uploadDocument({ connectionId: conn, folder, file, force, onProgress: (progress) => update({ progress }) });
        job.promise.then(
          () => {
            update({ state: "done", progress: 1 });
            refresh();
          },
          (e: Error) => update(e.message === "aborted" ? { state: "aborted" } : { state: "failed", error: e.message }),
        );
        return [...all, { name: file.name, progress: 0, state: "sending", job }];
      });
    }
  };


  const download = async (p: string) => {
    const link = await trpc.documents.downloadUrl.query({ connectionId: conn, path: p });
    const a = document.createElement("a");
    a.href = link.url;
    a.download = link.filename;
    a.click();
  };

  const crumbs = path === "" ? [] : path.split("/");
  const entries = listing.data?.entries ?? [];
  return (
    <section>
      <h1>Documents</h1>
      <div className="inline">
        <Choice
          label="Connection"
          value={conn}
          choices={(connections.data?.data ?? []).map((c) => [c.id, c.name] as const)}
          onChange={(v) => {
            setConnectionId(v);
            open("");
          }}
        />
        {isAdmin ? (
          <span className="field">
            <label htmlFor={forceId}>Allow changes to pipeline folders (force)</label>
            <input id={forceId} type="checkbox" checked={force} onChange={(e) => setForce(e.target.checked)} />
          </span>
        ) : (
          <p className="hint">Pipeline folders are changed by admins only.</p>
        )}
      </div>
      {connections.isSuccess && connections.data.data.length === 0 && <p>There is no connection yet.</p>}
      <nav aria-label="Folder" className="crumbs">
        <button type="button" className="link" onClick={() => open("")} aria-current={path === "" ? "location" : undefined}>
          Root
        </button>
        {crumbs.map((c, i) => (
          <span key={i}>
            {" / "}
            <button type="button" className="link" onClick={() => open(crumbs.slice(0, i + 1).join("/"))} aria-current={i === crumbs.length - 1 ? "location" : undefined}>
              {c}
            </button>
          </span>
        ))}
      </nav>
      <DropZone name="Documents drop zone" choose="Choose files" multiple onFiles={start}>
        Drop files here to upload them into {path === "" ? "the root folder" : `'${path}'`}, or
      </DropZone>
      <ul className="uploads" aria-label="Uploads">
        {sending.map((s, i) => (
          <li key={i}>
            {s.name}: <Progress value={s.progress} label={`Upload of ${s.name}`} />{" "}
            {s.state === "sending" ? (
              <button type="button" onClick={() => s.job.abort()}>
                Abort {s.name}
              </button>
            ) : s.state === "failed" ? (
              <span className="error" role="alert">
                {s.error}
              </span>
            ) : (
              <span role="status">{s.state === "done" ? "uploaded" : "aborted"}</span>
            )}
          </li>
        ))}
      </ul>
      <NewFolder onCreate={(name) => change.mutate(() => trpc.documents.createFolder.mutate({ connectionId: conn, path: path ? `${path}/${name}` : name, force }))} />
      <ErrorText error={listing.error ?? change.error} />
      {notice && <p role="status">{notice}</p>}
      <div className="actions">
        <button
          type="button"
          disabled={selected.length === 0}
          onClick={() =>
            change.mutate(async () => {
              const r = await trpc.documents.bulkDelete.mutate({ connectionId: conn, paths: selected, force });
              setNotice(`${r.deleted} deleted${r.failed ? `, ${r.failed} not: ${r.results.filter((x) => !x.deleted).map((x) => `${x.path} (${x.error?.message ?? ""})`).join("; ")}` : ""}.`);
            })
          }
        >
          Delete selected ({selected.length})
        </button>
      </div>
      <Table caption="Folder contents" columns={["Select", "Name", "Size", "Updated", "Actions"]}>
        {entries.map((e) => (
          <Row
            key={e.path}
            entry={e}
            selected={selected.includes(e.path)}
            onSelect={(on) => setSelected((all) => (on ? [...all, e.path] : all.filter((p) => p !== e.path)))}
            onOpen={() => open(e.path)}
            onDownload={() => download(e.path).catch((err) => setNotice(errorMessage(err)))}
            onRename={(name) => change.mutate(() => trpc.documents.rename.mutate({ connectionId: conn, path: e.path, name, force }))}
            onMove={(to) => change.mutate(() => trpc.documents.move.mutate({ connectionId: conn, from: e.path, to, force }))}
            onDelete={() =>
              change.mutate(() =>
                e.kind === "folder"
                  ? trpc.documents.deleteFolder.mutate({ connectionId: conn, path: e.path, force })
                  : trpc.documents.delete.mutate({ connectionId: conn, path: e.path, force }),
              )
            }
          />
        ))}
      </Table>
      {listing.isSuccess && entries.length === 0 && <p>This folder is empty.</p>}
      {listing.data?.nextCursor && <p className="hint">Showing the first 1000 entries; the API lists the rest (cursor {listing.data.nextCursor}).</p>}
    </section>
  );
}

function NewFolder(props: { onCreate: (name: string) => void }) {
  const [name, setName] = useState("");
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        if (name) props.onCreate(name);
        setName("");
      }}
    >
      <Field label="New folder name" value={name} onChange={(e) => setName(e.target.value)} />
      <button type="submit">Create folder</button>
    </form>
  );
}

function Row(props: {
  entry: Entry;
  selected: boolean;
  onSelect: (on: boolean) => void;
  onOpen: () => void;
  onDownload: () => void;
  onRename: (name: string) => void;
  onMove: (to: string) => void;
  onDelete: () => void;
}) {
  const { entry: e } = props;
  const [mode, setMode] = useState<"" | "rename" | "move" | "delete">("");
  const [value, setValue] = useState("");
  const folder = e.kind === "folder";
  const begin = (m: "rename" | "move" | "delete") => {
    setMode(m);
    setValue(m === "rename" ? e.name : m === "move" ? e.path : "");
  };
  return (
    <tr>
      <td>
        <input type="checkbox" aria-label={`Select ${e.name}`} checked={props.selected} onChange={(ev) => props.onSelect(ev.target.checked)} />
      </td>
      <td>
        {folder ? (
          <button type="button" className="link" onClick={props.onOpen}>
            {e.name}/
          </button>
        ) : (
          e.name
        )}
        {e.protected && <span className="badge"> pipeline folder</span>}
      </td>
      <td>{size(e.size)}</td>
      <td>{when(e.updatedAt)}</td>
      <td>
        {mode === "" ? (
          <span className="inline compact">
            {!folder && (
              <button type="button" className="small" onClick={props.onDownload} aria-label={`Download ${e.name}`}>
                Download
              </button>
            )}
            <button type="button" className="small" onClick={() => begin("rename")} aria-label={`Rename ${e.name}`}>
              Rename
            </button>
            <button type="button" className="small" onClick={() => begin("move")} aria-label={`Move ${e.name}`}>
              Move
            </button>
            <button type="button" className="small" onClick={() => begin("delete")} aria-label={`Delete ${e.name}`}>
              Delete
            </button>
          </span>
        ) : mode === "delete" ? (
          <span className="inline compact">
            {folder ? `Delete ${e.name} and everything in it?` : `Delete ${e.name}?`}
            <button type="button" className="small" onClick={props.onDelete}>
              Yes, delete
            </button>
            <button type="button" className="small" onClick={() => setMode("")}>
              Cancel
            </button>
          </span>
        ) : (
          <form
            className="inline compact"
            onSubmit={(ev) => {
              ev.preventDefault();
              (mode === "rename" ? props.onRename : props.onMove)(value);
              setMode("");
            }}
          >
            <Field label={mode === "rename" ? "New name" : "Move to"} value={value} onChange={(ev) => setValue(ev.target.value)} autoFocus />
            <button type="submit" className="small">
              {mode === "rename" ? "Rename" : "Move"}
            </button>
            <button type="button" className="small" onClick={() => setMode("")}>
              Cancel
            </button>
          </form>
        )}
      </td>
    </tr>
  );
}
