import { type DragEvent, useId } from "react";
import { ENCODINGS, type EditorOptions, ON_INVALID_ROW, TRANSFORMS, type TargetMode, type TargetRow } from "./mapping-model";
import { Choice } from "./pipeline-ui";

const OUTPUT_CHOICES = [["", "From the file name"], ["csv", "csv"], ["json", "json"], ["xml", "xml"]] as const;
const MODES: [TargetMode, string][] = [
  ["none", "Not mapped"],
  ["column", "A source column"],
  ["static", "A static value"],
  ["aggregated", "Several columns joined"],
];

/**
 * The source columns beside the target fields: each target is a group
 * (its name is the legend) with what fills it, the column or value, and a
 * transform. A column can be picked in the select or dragged onto a target.
 */
export function MappingTable(props: {
  rows: TargetRow[];
  columns: string[];
  targets: { name: string; required: boolean; type: string }[];
  aggregatedEnabled: boolean;
  onChange: (target: string, patch: Partial<TargetRow>) => void;
}) {
  const { rows, columns } = props;
  const info = new Map(props.targets.map((t) => [t.name, t]));
  const used = new Set(rows.flatMap((r) => (r.mode === "column" ? [r.source] : r.mode === "aggregated" ? r.sources : [])));
  return (
    <div className="mapping">
      <section aria-labelledby="source-title" className="sources">
        <h3 id="source-title">Source columns</h3>
        {columns.length === 0 ? (
          <p className="hint">Drop a sample file to see its columns.</p>
        ) : (
          <ul aria-label="Source columns">
            {columns.map((c) => (
              <li key={c} draggable onDragStart={(e) => e.dataTransfer.setData("text/x-fps-column", c)} className={used.has(c) ? "used" : undefined}>
                {c}
                {used.has(c) ? <span className="sr-only"> (mapped)</span> : null}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="target-title" className="targets">
        <h3 id="target-title">Target fields</h3>
        {!props.aggregatedEnabled && (
          <p className="hint">Aggregated mappings (several columns joined into one field) are not enabled for this workspace; an operator enables them per workspace.</p>
        )}
        {rows.map((r) => (
          <TargetEditor key={r.target} row={r} columns={columns} info={info.get(r.target)} aggregatedEnabled={props.aggregatedEnabled} onChange={(p) => props.onChange(r.target, { ...p, touched: true })} />
        ))}
      </section>
    </div>
  );
}

function TargetEditor(props: {
  row: TargetRow;
  columns: string[];
  info?: { required: boolean; type: string };
  aggregatedEnabled: boolean;
  onChange: (patch: Partial<TargetRow>) => void;
}) {
  const { row, columns, onChange } = props;
  const ids = { value: useId(), sources: useId(), delimiter: useId() };
  // A saved column the sample lacks stays choosable.
  const choices = row.source && !columns.includes(row.source) ? [...columns, row.source] : columns;
  const drop = (e: DragEvent<HTMLFieldSetElement>) => {
    const column = e.dataTransfer.getData("text/x-fps-column");
    if (!column) return;
    e.preventDefault();
    onChange({ mode: "column", source: column });
  };
  return (
    <fieldset className="target" onDragOver={(e) => e.preventDefault()} onDrop={drop}>
      <legend>{row.target}</legend>
      {props.info && (
        <p className="hint">
          {props.info.type || "any type"}
          {props.info.required ? ", required" : ""}
        </p>
      )}
      <div className="inline">
        <Choice
          label="Map from"
          value={row.mode}
          choices={MODES.filter(([m]) => m !== "aggregated" || props.aggregatedEnabled || row.mode === "aggregated")}
          onChange={(v) => onChange({ mode: v as TargetMode })}
        />
        {row.mode === "column" && (
          <>
            <Choice label="Column" value={row.source} choices={[["", "Choose a column"], ...choices.map((c) => [c, c] as const)]} onChange={(v) => onChange({ source: v })} />
          </>
        )}
        {row.mode === "static" && (
          <>
            <span className="field">
              <label htmlFor={ids.value}>Value</label>
              <input id={ids.value} value={row.value} onChange={(e) => onChange({ value: e.target.value })} />
            </span>
          </>
        )}
        {row.mode === "aggregated" && (
          <>
            <span className="field">
              <label htmlFor={ids.sources}>Columns</label>
              <select
                id={ids.sources}
                multiple
                value={row.sources}
                onChange={(e) => onChange({ sources: Array.from(e.target.selectedOptions, (o) => o.value) })}
              >
                {[...new Set([...columns, ...row.sources])].map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </span>
            <span className="field">
              <label htmlFor={ids.delimiter}>Joined with</label>
              <input id={ids.delimiter} value={row.delimiter} size={4} placeholder="space" onChange={(e) => onChange({ delimiter: e.target.value })} />
            </span>
          </>
        )}
        {row.mode !== "none" && (
          <>
            <Choice label="Transform" value={row.transform} choices={[["", "None"], ...TRANSFORMS.map((t) => [t, t] as const)]} onChange={(v) => onChange({ transform: v })} />
          </>
        )}
      </div>
    </fieldset>
  );
}

/** How files are read and what a bad row does. */
export function OptionsEditor(props: { options: EditorOptions; outbound: boolean; onChange: (patch: Partial<EditorOptions>) => void }) {
  const { options: o, onChange } = props;
  const ids = { delimiter: useId(), header: useId(), sheet: useId(), recordPath: useId() };
  return (
    <fieldset className="options">
      <legend>Reading options</legend>
      <div className="inline">
        <span className="field">
          <label htmlFor={ids.delimiter}>Delimiter</label>
          <input id={ids.delimiter} value={o.delimiter} size={4} maxLength={4} placeholder="auto" onChange={(e) => onChange({ delimiter: e.target.value })} />
        </span>
        <span className="field">
          <label htmlFor={ids.header}>Header row</label>
          <input id={ids.header} type="checkbox" checked={o.headerRow} onChange={(e) => onChange({ headerRow: e.target.checked })} />
        </span>
        <Choice label="Encoding" value={o.encoding} choices={[["", "Detect"], ...ENCODINGS.map((x) => [x, x] as const)]} onChange={(v) => onChange({ encoding: v })} />
        <span className="field">
          <label htmlFor={ids.sheet}>Sheet (XLSX)</label>
          <input id={ids.sheet} value={o.sheet} placeholder="first" onChange={(e) => onChange({ sheet: e.target.value })} />
        </span>
        <span className="field">
          <label htmlFor={ids.recordPath}>Record path (JSON, XML)</label>
          <input id={ids.recordPath} value={o.recordPath} placeholder="auto" onChange={(e) => onChange({ recordPath: e.target.value })} />
        </span>
        <Choice
          label="A row that fails validation"
          value={o.onInvalidRow}
          choices={[["", "fails the run (default)"], ...ON_INVALID_ROW.filter((x) => x !== "fail").map((x) => [x, x === "skip" ? "is skipped and reported" : "is quarantined"] as const)]}
          onChange={(v) => onChange({ onInvalidRow: v })}
        />
        {props.outbound && (
          <Choice label="Delivered format" value={o.outputFormat} choices={OUTPUT_CHOICES} onChange={(v) => onChange({ outputFormat: v })} />
        )}
      </div>
    </fieldset>
  );
}
