import { threadId } from "node:worker_threads";

/**
 * FPS_ENGINE_TRACE=1: each engine thread writes a line to stderr when a
 * file's phases start and end (a lead's plan, each part's rows, the copy of
 * the helpers' rows, the close), with the wall-clock time in milliseconds, so
 * that where a run's time goes can be seen in the service itself
 * (docs/decisions/engine.md, "Speed"). Off, it is a function that does nothing.
 */
export const trace: (what: string) => void =
  process.env.FPS_ENGINE_TRACE === "1" ? (what) => console.error(`[engine thread ${threadId} ${Date.now()}] ${what}`) : () => {};
