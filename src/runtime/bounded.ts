/**
 * Whether `work` settles (resolves or rejects) within `ms`. Used by close
 * paths: a database that stopped answering must not hold shutdown up, so
 * what waits on it is given a bound and then given up. `work` keeps running
 * when the bound passes; its outcome, even a later rejection, is handled here
 * and goes nowhere (the caller logs what it gave up).
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([work.then(() => true, () => true), bound]);
  } finally {
    clearTimeout(timer);
  }
}
