import { z } from "zod";
import { AppError } from "./errors";

// A missing member reads "name: is required", not zod's type message.
z.config({
  customError: (issue) => {
    if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
    return undefined;
  },
});

/** `mappings.fieldMappings[2].transform` */
export function formatPath(path: readonly PropertyKey[], root?: string): string {
  let out = root ?? "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || "body";
}

export function formatIssues(issues: readonly z.core.$ZodIssue[], root?: string): string {
  return issues
    .flatMap((i) =>
      i.code === "unrecognized_keys"
        ? i.keys.map((k) => `${formatPath([...i.path, k], root)}: unknown member (check its spelling)`)
        : [`${formatPath(i.path, root)}: ${i.message}`],
    )
    .slice(0, 5)
    .join("; ");
}

/**
 * Members a client may send back unchanged from a response it read (ids,
 * timestamps, computed members): they are dropped before parsing, so that
 * strict shapes refuse only real mistakes. Dotted paths reach into objects.
 */
export function withoutReadOnly(raw: unknown, paths: readonly string[]): unknown {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return raw;
  const out: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  for (const path of paths) {
    const [head, ...rest] = path.split(".");
    if (!(head! in out)) continue;
    if (rest.length === 0) delete out[head!];
    else out[head!] = withoutReadOnly(out[head!], [rest.join(".")]);
  }
  return out;
}

/**
 * Parses untrusted input against a shape. Every use case calls this on its
 * input so that REST, GraphQL, tRPC, workers and the CLI get the same rules
 * and the same messages.
 */
export function parseInput<S extends z.ZodType>(shape: S, raw: unknown, root?: string): z.output<S> {
  const r = shape.safeParse(raw);
  if (!r.success) throw new AppError("invalid_input", formatIssues(r.error.issues, root));
  return r.data;
}
