import type { EnginePool } from "./types";

// PENDING(engine helper): replaced by the Bun Worker pool.
export function createEnginePool(_opts: { size: number }): EnginePool {
  return {
    process: () => Promise.reject(new Error("engine: implementation pending")),
    close: async () => {},
  };
}
