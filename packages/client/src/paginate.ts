import type { Core, paths } from "./client.js";

type Get<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type Json200<O> = O extends { responses: { 200: { content: { "application/json": infer R } } } } ? R : never;
type ItemOf<R> = R extends readonly (infer I)[] ? I : R extends { data: readonly (infer I)[] } ? I : R extends { entries: readonly (infer I)[] } ? I : never;
export type ListParams<P extends keyof paths> = Get<P> extends { parameters: infer X } ? Omit<X, "header" | "cookie"> : never;

/** Every GET route that answers a list, whatever its paging style. */
export type ListPath = { [P in keyof paths & string]: [ItemOf<Json200<Get<P>>>] extends [never] ? never : P }[keyof paths & string];
export type ListItem<P extends ListPath> = ItemOf<Json200<Get<P>>>;

/**
 * Every item of a list route, page after page, as one async iterator. The
 * service has three styles and this reads each: a bare array with
 * `X-Total-Pages` (connections, pipelines), `{data, pagination: {page,
 * totalPages}}` (runs, schemas, webhooks, deliveries...) and `{entries,
 * nextCursor}` (documents). `query.page` / `query.cursor` start elsewhere.
 */
export async function* paginate<P extends ListPath>(core: Core, path: P, params?: ListParams<P>): AsyncGenerator<ListItem<P>> {
  const base = (params ?? {}) as { path?: Record<string, unknown>; query?: Record<string, unknown> };
  let query: Record<string, unknown> = { ...(base.query ?? {}) };
  for (;;) {
    const { data, response } = await (core.api.GET as (p: string, i: unknown) => Promise<{ data?: unknown; response: Response }>)(path, {
      params: { ...base, query },
    });
    if (Array.isArray(data)) {
      for (const item of data) yield item as ListItem<P>;
      const page = Number(query.page ?? 1);
      const totalPages = Number(response.headers.get("x-total-pages") ?? 0);
      if (data.length === 0 || !(page < totalPages)) return;
      query = { ...query, page: page + 1 };
      continue;
    }
    const body = (data ?? {}) as { data?: unknown[]; pagination?: { page?: number; totalPages?: number }; entries?: unknown[]; nextCursor?: string | null };
    if (Array.isArray(body.entries)) {
      for (const item of body.entries) yield item as ListItem<P>;
      if (!body.nextCursor) return;
      query = { ...query, cursor: body.nextCursor };
      continue;
    }
    const items = body.data ?? [];
    for (const item of items) yield item as ListItem<P>;
    const page = body.pagination?.page ?? Number(query.page ?? 1);
    if (items.length === 0 || !(page < (body.pagination?.totalPages ?? 0))) return;
    query = { ...query, page: page + 1 };
  }
}

export type SearchBody = NonNullable<paths["/files/search"]["post"]["requestBody"]>["content"]["application/json"];
export type SearchHit = paths["/files/search"]["post"]["responses"][200]["content"]["application/json"]["results"][number];

/** Every hit of a row search, following `offset` until `pagination.total` is reached. */
export async function* searchAll(core: Core, body: SearchBody): AsyncGenerator<SearchHit> {
  let offset = body.offset ?? 0;
  for (;;) {
    const { data } = await core.api.POST("/files/search", { body: { ...body, offset } });
    const page = data!;
    for (const hit of page.results) yield hit;
    offset += page.results.length;
    if (page.results.length === 0 || offset >= page.pagination.total) return;
  }
}
