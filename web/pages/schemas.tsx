import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, navigate } from "../router";
import { errorCode, trpc } from "../trpc";
import { when } from "../types";
import { ErrorText, Field, Table, TextArea } from "../ui";
import { NotFound } from "./not-found";
import { CheckLine, sampleOf, useDefinitionCheck } from "./schemas-editor";

const STARTER = `{
  "type": "object",
  "properties": {
    "sku": { "type": "string" }
  },
  "required": ["sku"]
}`;

export function Schemas() {
  const list = useQuery({ queryKey: ["schemas"], queryFn: () => trpc.schemas.list.query({ limit: 100 } as never) });
  return (
    <section>
      <h1>Schemas</h1>
      <p className="hint">A schema is the JSON Schema every mapped row of a pipeline must meet.</p>
      <Link className="button-like" href="/setup/schemas/new">
        New schema
      </Link>
      <ErrorText error={list.error} />
      <Table caption="Schemas" columns={["Name", "Columns", "Updated"]}>
        {list.data?.data.map((s) => (
          <tr key={s.id}>
            <td>
              <Link href={`/setup/schemas/${s.id}`}>{s.name}</Link>
            </td>
            <td>{Object.keys((s.definition.properties as object | undefined) ?? {}).join(", ")}</td>
            <td>{when(s.updatedAt)}</td>
          </tr>
        ))}
      </Table>
      {list.data?.data.length === 0 && <p>No schemas yet.</p>}
    </section>
  );
}

/** `/setup/schemas/new` or an existing schema: the editor, inference from a sample, and the pipelines using it. */
export function SchemaPage({ id }: { id: string }) {
  const isNew = id === "new";
  const schema = useQuery({ queryKey: ["schema", id], queryFn: () => trpc.schemas.get.query({ id }), enabled: !isNew });
  if (!isNew && schema.isPending) return <p className="loading">Loading…</p>;
  if (errorCode(schema.error) === "not_found") return <NotFound what="This schema" />;
  if (!isNew && !schema.data) return <ErrorText error={schema.error} />;
  const s = schema.data;
  return (
    <section>
      <p>
        <Link href="/setup/schemas">Schemas</Link> /
      </p>
      <h1>{s ? s.name : "New schema"}</h1>
      <SchemaForm key={id} id={isNew ? null : id} name={s?.name ?? ""} description={s?.description ?? ""} definition={s ? JSON.stringify(s.definition, null, 2) : STARTER} />
      {s && <UsedBy id={id} />}
    </section>
  );
}

function SchemaForm(props: { id: string | null; name: string; description: string; definition: string }) {
  const qc = useQueryClient();
  const [text, setText] = useState(props.definition);
  const check = useDefinitionCheck(text);
  const save = useMutation({
    mutationFn: (v: { name: string; description: string | null; definition: Record<string, unknown> }) =>
      props.id ? trpc.schemas.update.mutate({ id: props.id, data: v }) : trpc.schemas.create.mutate(v),
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ["schemas"] });
      qc.setQueryData(["schema", saved.id], saved);
      if (!props.id) navigate(`/setup/schemas/${saved.id}`, { replace: true });
    },
  });
  const infer = useMutation({
    mutationFn: async (file: File) => trpc.schemas.infer.mutate({ sample: await sampleOf(file) }),
    onSuccess: (draft) => setText(JSON.stringify(draft.definition, null, 2)),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    let definition: Record<string, unknown>;
    try {
      definition = JSON.parse(text);
    } catch {
      return; // The check line already says where the text is not JSON.
    }
    save.mutate({ name: String(f.get("name")), description: String(f.get("description") ?? "") || null, definition });
  };
  return (
    <form onSubmit={submit} aria-label="Schema">
      <Field label="Schema name" name="name" required defaultValue={props.name} />
      <Field label="Description" name="description" defaultValue={props.description} />
      <div className="field">
        <label>
          Infer from a sample file
          <input type="file" accept=".csv,.tsv,.txt,.json,.ndjson,.xml,.xlsx,.gz" onChange={(e) => e.target.files?.[0] && infer.mutate(e.target.files[0])} />
        </label>
        <p className="hint">Fills the definition below with a draft read from the file (columns, types, required ones); nothing is saved until you save.</p>
      </div>
      <ErrorText error={infer.error} />
      {infer.data && (
        <p role="status">
          Drafted from {infer.data.rows} rows ({infer.data.detected.format}
          {infer.data.truncated ? ", the file's start only" : ""}): {infer.data.columns.map((c) => `${c.source} → ${c.target} (${c.type ?? "any"})`).join(", ")}.
        </p>
      )}
      <TextArea label="Definition (JSON Schema)" className="code" rows={16} spellCheck={false} value={text} onChange={(e) => setText(e.target.value)} />
      <CheckLine check={check} />
      <ErrorText error={save.error} />
      {save.isSuccess && <p role="status">Saved.</p>}
      <button type="submit" disabled={save.isPending}>
        {props.id ? "Save schema" : "Create schema"}
      </button>
    </form>
  );
}

function UsedBy({ id }: { id: string }) {
  const users = useQuery({ queryKey: ["schema-pipelines", id], queryFn: () => trpc.schemas.pipelines.query({ id }) });
  return (
    <section aria-label="Used by">
      <h2>Pipelines using this schema</h2>
      <ErrorText error={users.error} />
      {users.data?.length === 0 && <p>No pipeline uses it yet.</p>}
      <ul>
        {users.data?.map((p) => (
          <li key={p.id}>
            {p.name} ({p.direction}
            {p.isActive ? "" : ", inactive"})
          </li>
        ))}
      </ul>
    </section>
  );
}
