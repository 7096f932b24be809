import { type Page, pagination } from "../../services/shared/shapes";

/** Lists the spec shows as bare arrays stay arrays; their totals travel in headers. */
export function bareList<T, U>(set: { headers: Record<string, string | number> }, page: Page<T>, present: (t: T) => U): U[] {
  const p = pagination(page);
  set.headers["x-total-count"] = String(p.total);
  set.headers["x-total-pages"] = String(p.totalPages);
  return page.items.map(present);
}

/** Everything else lists as `{data, pagination}`. */
export function pagedList<T, U>(page: Page<T>, present: (t: T) => U) {
  return { data: page.items.map(present), pagination: pagination(page) };
}
