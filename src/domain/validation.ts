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
    .slice(0, 5)
    .map((i) => `${formatPath(i.path, root)}: ${i.message}`)
    .join("; ");
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
