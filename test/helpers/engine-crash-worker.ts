// The engine's worker, except that it dies on chosen file names: for test/engine.pool.test.ts.
import "../../src/engine/worker";

declare const self: Worker;
const real = self.onmessage!;
self.onmessage = (event: MessageEvent) => {
  const name = (event.data as { req?: { filename: string } }).req?.filename;
  if (name === "exit.csv") process.exit(3);
  if (name === "throw.csv") throw new Error("worker blew up");
  return real.call(self, event);
};
