import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useMemo, useState } from "react";
import { Link, navigate } from "../router";
import { trpc } from "../trpc";
import { ErrorText, Field } from "../ui";
import { Choice, DropZone } from "./pipeline-ui";
import { MappingTable, OptionsEditor } from "./mapping-editor";
import { autoPair, type EditorOptions, optionsFrom, rowsFrom, type TargetRow, targetsOf, toMappings } from "./mapping-model";
import { PreviewPanel, readSample, type Sample, usePreview } from "./mapping-preview";
import { PipelineVersions } from "./pipeline-versions";

const all = { limit: 100 } as never;

/** A pipeline's page: its settings, the mapping editor with its live preview, and save. `id` absent: a new pipeline. */
export function PipelineEditor(props: { id?: string }) {
  const existing = useQuery({ queryKey: ["pipeline", props.id], queryFn: () => trpc.pipelines.get.query({ id: props.id! }), enabled: !!props.id });
  if (props.id && existing.isPending) return <p className="loading">Loading…</p>;
  if (existing.error) return <ErrorText error={existing.error} />;
  return <EditorForm key={props.id ?? "new"} pipeline={existing.data} />;
}

type Pipeline = Awaited<ReturnType<typeof trpc.pipelines.get.query>>;

function EditorForm({ pipeline }: { pipeline?: Pipeline }) {
  const qc = useQueryClient();
  const connections = useQuery({ queryKey: ["connections", "all"], queryFn: () => trpc.connections.list.query(all) });
  const schemas = useQuery({ queryKey: ["schemas", "all"], queryFn: () => trpc.schemas.list.query(all) });
  const webhooks = useQuery({ queryKey: ["webhooks", "all"], queryFn: () => trpc.webhooks.list.query(all) });
  const workspace = useQuery({ queryKey: ["workspace"], queryFn: () => trpc.workspace.get.query() });
  const [name, setName] = useState(pipeline?.name ?? "");
  const [direction, setDirection] = useState<"inbound" | "outbound">(pipeline?.direction ?? "inbound");
  const [clientId, setClientId] = useState(pipeline?.clientId ?? "");
  const [schemaId, setSchemaId] = useState(pipeline?.schemaId ?? "");
  const [isActive, setActive] = useState(pipeline?.isActive ?? true);
  const [webhookIds, setWebhookIds] = useState<string[]>(pipeline?.webhooks?.map((w) => w.id) ?? []);
  const [rows, setRows] = useState<TargetRow[]>(() => rowsFrom([], pipeline?.mappings));
  const [options, setOptions] = useState<EditorOptions>(() => optionsFrom(pipeline?.mappings));
  const [sample, setSample] = useState<Sample | null>(null);
  const activeId = useId();

  const chosenSchema = schemaId || schemas.data?.data[0]?.id || "";
  const chosenConnection = clientId || connections.data?.data[0]?.id || "";
  const schema = useQuery({ queryKey: ["schema", chosenSchema], queryFn: () => trpc.schemas.get.query({ id: chosenSchema }), enabled: !!chosenSchema });
  const targets = useMemo(() => targetsOf(schema.data?.definition), [schema.data]);
  // The schema's fields become the rows (choices already made are kept).
  useEffect(() => {
    if (!schema.data) return;
    setRows((current) => {
      const kept = new Map(current.map((r) => [r.target, r]));
      const fresh = rowsFrom(targets.map((t) => t.name), pipeline?.mappings);
      return fresh.map((r) => kept.get(r.target) ?? r);
    });
  }, [schema.data, targets, pipeline?.mappings]);

  const mappings = useMemo(() => toMappings(rows, options, pipeline?.mappings), [rows, options, pipeline?.mappings]);
  const preview = usePreview({ pipelineId: pipeline?.id, schemaId: chosenSchema, mappings, sample });
  const columns = preview.data?.columns ?? [];
  // New columns from a sample: pair what matches by name.
  const columnsKey = columns.join("\u0000");
  useEffect(() => {
    if (columns.length > 0) setRows((r) => autoPair(r, columns));
    // biome-ignore lint/correctness/useExhaustiveDependencies: paired once per set of columns
  }, [columnsKey]);

  const aggregatedEnabled = workspace.data?.features.includes("aggregated-mappings") ?? false;
  const save = useMutation({
    mutationFn: async () => {
      const data = { name, direction, clientId: chosenConnection, schemaId: chosenSchema, isActive, webhookIds, mappings };
      const saved = await (pipeline ? trpc.pipelines.update.mutate({ id: pipeline.id, data }) : trpc.pipelines.create.mutate(data));
      return { saved, previous: pipeline?.version };
    },
    onSuccess: ({ saved }) => {
      qc.invalidateQueries({ queryKey: ["pipelines"] });
      qc.setQueryData(["pipeline", saved.id], saved);
      if (!pipeline) navigate(`/setup/pipelines/${saved.id}?saved=1`, { replace: true });
    },
  });
  const justCreated = new URLSearchParams(window.location.search).has("saved");

  const take = async (files: FileList | null) => {
    const file = files?.[0];
    if (file) setSample(await readSample(file));
  };


  return (
    <section>
      <p>
        <Link href="/setup/pipelines">All pipelines</Link>
      </p>
      <h1>{pipeline ? `Pipeline ${pipeline.name}` : "New pipeline"}</h1>
      {pipeline && <p className="hint">Version {pipeline.version}, {pipeline.direction}.</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <div className="inline">
          <Field label="Pipeline name" value={name} onChange={(e) => setName(e.target.value)} required />
          <Choice
            label="Direction"
            value={direction}
            choices={[
              ["inbound", "inbound (files from the partner)"],
              ["outbound", "outbound (files to the partner)"],
            ]}
            onChange={(v) => setDirection(v as "inbound" | "outbound")}
          />
          <Choice label="Connection" value={chosenConnection} choices={(connections.data?.data ?? []).map((c) => [c.id, c.name] as const)} onChange={setClientId} />
          <Choice label="Schema" value={chosenSchema} choices={(schemas.data?.data ?? []).map((s) => [s.id, s.name] as const)} onChange={setSchemaId} />
          <span className="field">
            <label htmlFor={activeId}>Active</label>
            <input id={activeId} type="checkbox" checked={isActive} onChange={(e) => setActive(e.target.checked)} />
          </span>
        </div>
        {connections.isSuccess && connections.data.data.length === 0 && <p className="hint">There is no connection yet: create one first.</p>}
        {schemas.isSuccess && schemas.data.data.length === 0 && <p className="hint">There is no schema yet: create one first.</p>}
        <WebhookChoice webhooks={webhooks.data?.data ?? []} chosen={webhookIds} onChange={setWebhookIds} />

        <h2>Mappings</h2>
        <DropZone name="Sample file drop zone" choose="Choose a sample file" onFiles={(files) => void take(files)}>
          {sample
            ? `Sample: ${sample.filename}${sample.cut ? " (its first 700 KB)" : ""}. Drop another to replace it, or`
            : "Drop a sample file here (CSV, TSV, JSON, XML, XLSX), or"}
        </DropZone>
        <MappingTable
          rows={rows}
          columns={columns}
          targets={targets}
          aggregatedEnabled={aggregatedEnabled}
          onChange={(target, patch) => setRows((all) => all.map((r) => (r.target === target ? { ...r, ...patch } : r)))}
        />
        <OptionsEditor options={options} outbound={direction === "outbound"} onChange={(p) => setOptions((o) => ({ ...o, ...p }))} />
        <PreviewPanel preview={preview} targets={targets.map((t) => t.name)} />
        <div className="actions">
          <button type="submit" disabled={save.isPending || !chosenConnection || !chosenSchema}>
            {pipeline ? "Save changes" : "Create pipeline"}
          </button>
          <span role="status">{save.isSuccess || (justCreated && !save.isPending && !save.error) ? savedText(save.data?.saved ?? pipeline!, save.data?.previous) : ""}</span>
        </div>
        <ErrorText error={save.error} />
      </form>
      {pipeline && <PipelineVersions id={pipeline.id} current={pipeline.version} />}
    </section>
  );
}

/** What a save made: a new version when mappings or schema changed, else the same one (a name or webhook change). */
function savedText(saved: Pipeline, previous: number | undefined): string {
  const at = new Date(saved.updatedAt as unknown as string).toLocaleTimeString();
  if (previous === saved.version) return `Saved at ${at}; still version ${saved.version} (nothing that changes how files are processed changed).`;
  return `Saved at ${at} as version ${saved.version}.`;
}

function WebhookChoice(props: { webhooks: { id: string; name: string; url: string }[]; chosen: string[]; onChange: (ids: string[]) => void }) {
  if (props.webhooks.length === 0) return <p className="hint">No webhooks yet; webhooks created for this workspace can be linked here.</p>;
  return (
    <fieldset>
      <legend>Linked webhooks</legend>
      {props.webhooks.map((w) => (
        <label key={w.id} className="check">
          <input
            type="checkbox"
            checked={props.chosen.includes(w.id)}
            onChange={(e) => props.onChange(e.target.checked ? [...props.chosen, w.id] : props.chosen.filter((x) => x !== w.id))}
          />
          {w.name} ({w.url})
        </label>
      ))}
      {props.chosen.length > 0 && (
        <p className="hint">
          Deliveries:{" "}
          {props.webhooks
            .filter((w) => props.chosen.includes(w.id))
            .map((w, i) => (
              <span key={w.id}>
                {i > 0 ? ", " : ""}
                <Link href={`/setup/webhooks/${w.id}`}>{w.name}</Link>
              </span>
            ))}
        </p>
      )}
    </fieldset>
  );
}
