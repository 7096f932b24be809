/** GraphQL passes absent arguments as undefined or null; services read absent members as "no filter". */
export function defined(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined && v !== null));
}
