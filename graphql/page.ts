import { type Page, Pagination, pagination } from "../src/services/shared/shapes";
import { builder } from "./builder";
import { type ObjectRefOf, outputType } from "./from-zod";

/** A page of records and how to present each, presented only when `data` is asked for. */
export type Presented<O> = Page<unknown> & { data: () => O[] };

/** `XPage { data: [X!]!, pagination: Pagination! }` */
export function pageOf<O>(name: string, item: ObjectRefOf<O>) {
  return builder.objectRef<Presented<O>>(`${name}Page`).implement({
    fields: (t) => ({
      data: t.field({ type: [item], resolve: (p) => p.data() }),
      pagination: t.field({ type: outputType(Pagination), resolve: (p) => pagination(p) }),
    }),
  });
}

export const paged = <T, O>(page: Page<T>, present: (x: T) => O): Presented<O> => ({ ...page, data: () => page.items.map(present) });
