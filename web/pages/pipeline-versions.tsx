import { useQuery } from "@tanstack/react-query";
import { trpc } from "../trpc";
import { when } from "../types";
import { ErrorText, Table } from "../ui";

type Version = Awaited<ReturnType<typeof trpc.pipelines.versions.query>>["data"][number];

const REASONS: Record<string, string> = { created: "created", updated: "edited", schemaUpdated: "schema changed", migrated: "as it stood when versions began" };

/** What changed in one version, in words: targets added, removed or changed, options and validations touched, the schema. */
export function changesText(v: Version): string {
  const c = v.changes;
  const parts: string[] = [];
  if (c.fieldMappings) {
    const f = c.fieldMappings;
    if (f.added.length) parts.push(`mapped ${f.added.join(", ")}`);
    if (f.removed.length) parts.push(`unmapped ${f.removed.join(", ")}`);
    if (f.changed.length) parts.push(`changed ${f.changed.join(", ")}`);
    if (!f.added.length && !f.removed.length && !f.changed.length) parts.push("reordered the fields");
  }
  if (c.options?.length) parts.push(`options: ${c.options.join(", ")}`);
  if (c.validations?.length) parts.push(`validations: ${c.validations.join(", ")}`);
  if (c.schemaId) parts.push(`schema ${c.schemaId.from} → ${c.schemaId.to}`);
  if (c.fields.includes("schema.definition")) parts.push("the schema's definition");
  return parts.join("; ") || "first version";
}

/** The pipeline's versions, newest first, with what changed, who and when (`pipelines.versions`). */
export function PipelineVersions(props: { id: string; current: number }) {
  const versions = useQuery({ queryKey: ["pipeline-versions", props.id, props.current], queryFn: () => trpc.pipelines.versions.query({ id: props.id, limit: 100 } as never) });
  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <ErrorText error={versions.error} />
      <Table caption="Versions" columns={["Version", "Why", "What changed", "By", "When"]}>
        {versions.data?.data.map((v) => (
          <tr key={v.version}>
            <td>{v.version}</td>
            <td>{REASONS[v.reason] ?? v.reason}</td>
            <td>{changesText(v)}</td>
            <td>{v.createdBy?.name ?? v.createdBy?.type ?? ""}</td>
            <td>{when(v.createdAt)}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
