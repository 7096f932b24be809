import { useEffect, useRef, useState } from "react";
import { errorMessage, trpc } from "../trpc";
import { Table } from "../ui";
import type { Mappings } from "./mapping-model";

/** A sample as tRPC takes it: text, or base64 for binary files (workbooks, gzip). */
export interface Sample {
  filename: string;
  text?: string;
  base64?: string;
  /** The file was cut to fit one request. */
  cut: boolean;
  size: number;
}

/** The tRPC body is capped (MAX_JSON_BODY_BYTES, 1 MiB); a larger file is previewed from its start. */
const SAMPLE_MAX_BYTES = 700 * 1024;
const BINARY = /\.(xlsx|gz|zip)$/i;

export async function readSample(file: File): Promise<Sample> {
  const cut = file.size > SAMPLE_MAX_BYTES;
  if (BINARY.test(file.name)) {
    const bytes = new Uint8Array(await file.slice(0, SAMPLE_MAX_BYTES).arrayBuffer());
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return { filename: file.name, base64: btoa(bin), cut, size: file.size };
  }
  let text = await file.slice(0, SAMPLE_MAX_BYTES).text();
  // A cut text file ends at its last whole line.
  if (cut && text.includes("\n")) text = text.slice(0, text.lastIndexOf("\n") + 1);
  return { filename: file.name, text, cut, size: file.size };
}

type Preview = Awaited<ReturnType<typeof trpc.pipelines.previewDraft.mutate>>;

/**
 * The preview of the first 100 rows under the editor's current mappings,
 * asked for again 300 ms after the last change; an answer to an older
 * question is dropped. A saved pipeline is previewed through its id
 * (`pipelines.preview`), a new one through `pipelines.previewDraft`.
 */
export function usePreview(input: { pipelineId?: string; schemaId: string; mappings: Mappings; sample: Sample | null }) {
  const [state, setState] = useState<{ data?: Preview; error?: string; pending: boolean }>({ pending: false });
  const seq = useRef(0);
  const key = JSON.stringify([input.pipelineId, input.schemaId, input.mappings, input.sample?.filename, input.sample?.size]);
  useEffect(() => {
    const { sample, schemaId, mappings, pipelineId } = input;
    if (!sample || !schemaId) return;
    const n = ++seq.current;
    setState((s) => ({ ...s, pending: true }));
    const timer = setTimeout(() => {
      const body = { filename: sample.filename, ...(sample.base64 !== undefined ? { base64: sample.base64 } : { text: sample.text }) };
      const call = pipelineId
        ? trpc.pipelines.preview.mutate({ id: pipelineId, data: { sample: body, mappings, schemaId, limit: 100 } })
        : trpc.pipelines.previewDraft.mutate({ sample: body, mappings, schemaId, limit: 100 });
      call.then(
        (data) => n === seq.current && setState({ data, pending: false }),
        (e) => n === seq.current && setState({ error: errorMessage(e), pending: false }),
      );
    }, 300);
    return () => clearTimeout(timer);
    // biome-ignore lint/correctness/useExhaustiveDependencies: `key` is the input, serialised
  }, [key]);
  return state;
}

export function PreviewPanel(props: { preview: ReturnType<typeof usePreview>; targets: string[] }) {
  const { data, error, pending } = props.preview;
  return (
    <section aria-labelledby="preview-title" className="preview">
      <h2 id="preview-title">Preview</h2>
      <p className="hint" role="status">
        {pending ? "Updating the preview…" : data ? `Previewed in ${data.ms} ms.` : "Drop a sample file to see the first 100 mapped rows."}
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {data && <PreviewResult data={data} targets={props.targets} />}
    </section>
  );
}

function PreviewResult({ data, targets }: { data: Preview; targets: string[] }) {
  const columns = targets.length > 0 ? targets : Object.keys(data.rows[0]?.row ?? {});
  return (
    <>
      <dl className="facts" aria-label="Preview summary">
        <dt>Detected</dt>
        <dd>
          {data.detected
            ? [data.detected.format, data.detected.encoding, data.detected.delimiter && `delimiter ${JSON.stringify(data.detected.delimiter)}`, data.detected.sheet && `sheet ${data.detected.sheet}`]
                .filter(Boolean)
                .join(", ")
            : "could not be read"}
        </dd>
        <dt>Rows</dt>
        <dd>
          {data.counts.total} read, {data.counts.valid} valid, {data.counts.invalid} invalid
          {data.truncated ? " (the sample is the file's start)" : ""}
        </dd>
        <dt>A run would end</dt>
        <dd className={`status s-${data.run.status}`}>
          {data.run.status}
          {data.run.errorMessage ? `: ${data.run.errorMessage}` : ""}
        </dd>
        {data.header && data.header.missingColumns.length > 0 && (
          <>
            <dt>Missing columns</dt>
            <dd className="error">{data.header.missingColumns.join(", ")}</dd>
          </>
        )}
        {data.header && data.header.unusedColumns.length > 0 && (
          <>
            <dt>Unused columns</dt>
            <dd>{data.header.unusedColumns.join(", ")}</dd>
          </>
        )}
      </dl>
      <Table caption="Preview rows" columns={["Row", ...columns, "Errors"]}>
        {data.rows.map((r) => (
          <tr key={r.inputRow} className={r.valid ? undefined : "invalid"}>
            <td>{r.inputRow}</td>
            {columns.map((c) => (
              <td key={c}>{show(r.row[c])}</td>
            ))}
            <td className="error">{r.errors.map((e) => `${e.field}: ${e.message}`).join("; ")}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

const show = (v: unknown) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
