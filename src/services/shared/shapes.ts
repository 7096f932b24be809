import { z } from "zod";

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** A human-readable resource name: trimmed, 1-200 characters, no control characters. */
export const Name = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  // biome-ignore lint: control characters are exactly what is refused here
  .regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters");

export const Id = z.string().min(1, "must not be empty").max(100, "is not a valid id");

/** Query strings carry text; page and limit are coerced and bounded. */
export const PageQuery = z.object({
  page: z.coerce.number({ error: "must be a whole number" }).int("must be a whole number").min(1, "must be at least 1").default(1),
  limit: z.coerce
    .number({ error: "must be a whole number" })
    .int("must be a whole number")
    .min(1, "must be at least 1")
    .max(MAX_PAGE_SIZE, `must be at most ${MAX_PAGE_SIZE}`)
    .default(DEFAULT_PAGE_SIZE),
});
export type PageQuery = z.output<typeof PageQuery>;

export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  total: number;
}

export const Pagination = z
  .object({
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    totalPages: z.number().int(),
  })
  .meta({ id: "Pagination" });

export function pagination(p: Page<unknown>): z.output<typeof Pagination> {
  return { page: p.page, limit: p.limit, total: p.total, totalPages: Math.ceil(p.total / p.limit) };
}

/** A boolean that arrives as text in a query string and as a boolean elsewhere. */
export const QueryBool = z.preprocess(
  (v) => (v === "true" ? true : v === "false" ? false : v),
  z.boolean({ error: "must be true or false" }),
);

export const DeleteResult = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: "DeleteResult" });

/** `%`, `_` and `\` are literal in a user's search text. */
export function likeContains(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
