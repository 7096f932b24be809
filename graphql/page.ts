import { type Page, Pagination, pagination } from "../src/services/shared/shapes";
import { builder } from "./builder";
import { type OutputRef, outputType } from "./from-zod";

/** `XPage { data: [X!]!, pagination: Pagination! }` */
export function pageOf(name: string, item: OutputRef) {
  return builder.objectRef<Page<unknown> & { present: (x: unknown) => Record<string, unknown> }>(`${name}Page`).implement({
    fields: (t) => ({
      data: t.field({ type: [item], resolve: (p) => p.items.map(p.present) }),
      pagination: t.field({ type: outputType(Pagination), resolve: (p) => pagination(p) }),
    }),
  });
}

export const paged = <T>(page: Page<T>, present: (x: T) => object) => ({ ...page, present: present as (x: unknown) => Record<string, unknown> });
