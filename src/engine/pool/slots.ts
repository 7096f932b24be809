import type { EngineProgress, ProcessOutcome, ProcessRequest } from "../types";
import type { WorkerReply, WorkerRequest } from "../worker";

/** A request to the pool, from its arrival to its outcome. */
export interface Job {
  id: number;
  req: ProcessRequest;
  /** Rows and bytes read so far: striped reads add each stripe's as it comes back, a whole read's worker writes them. */
  progress: EngineProgress;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** The slots a striped read of this job's file holds. */
  session?: Slot[];
  /** Read whole: a striped read of it gave up and every worker it held died. */
  noStripes?: boolean;
  settled?: boolean;
  resolve(outcome: ProcessOutcome): void;
  reject(err: unknown): void;
}

/** A message sent to a worker whose reply someone awaits. */
interface Pending {
  id: number;
  job: Job | null;
  resolve(reply: WorkerReply): void;
  reject(err: Error): void;
}

export interface Slot {
  // Bun's own Worker type carries ref/unref (the global one may be the DOM's).
  worker: Bun.Worker;
  /** Messages sent whose replies are awaited, by id (a worker handles its messages one after another, in order). */
  pending: Map<number, Pending>;
  /** The job whose striped read holds this worker (between its tasks too). */
  heldFor: Job | null;
}

export const idle = (s: Slot) => s.pending.size === 0 && s.heldFor === null;

/**
 * The pool's worker threads: started on demand up to `size`, each with the
 * messages it was sent and awaits replies to. A worker that dies, or is
 * retired, rejects what it was asked; `changed` runs after every reply and
 * every death, so the scheduler can hand out the freed worker.
 */
export class WorkerSlots {
  readonly slots: Slot[] = [];
  private nextId = 1;

  constructor(
    readonly size: number,
    private readonly workerUrl: string | URL,
    private readonly changed: () => void,
  ) {}

  /** A fresh id for a job or a message. */
  id(): number {
    return this.nextId++;
  }

  canSpawn(): boolean {
    return this.slots.length < this.size;
  }

  /** Workers that may still be started. */
  spawnable(): number {
    return this.size - this.slots.length;
  }

  alive(slot: Slot): boolean {
    return this.slots.includes(slot);
  }

  idle(): Slot[] {
    return this.slots.filter(idle);
  }

  spawn(): Slot {
    const worker = new Worker(this.workerUrl) as unknown as Bun.Worker;
    // Only a worker with something to do keeps the process alive (ref'd while it has a task).
    worker.unref();
    const slot: Slot = { worker, pending: new Map(), heldFor: null };
    worker.addEventListener("message", (event) => {
      const reply = (event as MessageEvent<WorkerReply>).data;
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      if (!slot.heldFor && slot.pending.size === 0) worker.unref();
      p.resolve(reply);
      this.changed();
    });
    worker.addEventListener("error", (event) => this.crashed(slot, (event as ErrorEvent).message || "uncaught error in the worker"));
    worker.addEventListener("close", (event) => this.crashed(slot, `worker exited with code ${(event as CloseEvent).code ?? "unknown"}`));
    this.slots.push(slot);
    return slot;
  }

  retire(slot: Slot, why: string): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    slot.worker.terminate();
    const pending = [...slot.pending.values()];
    slot.pending.clear();
    slot.heldFor = null;
    for (const p of pending) p.reject(new Error(why));
  }

  private crashed(slot: Slot, detail: string): void {
    if (!this.alive(slot)) return;
    this.retire(slot, detail);
    this.changed();
  }

  /** Sends `msg` to an idle (or held) slot and waits for its reply; rejects if the worker dies first. */
  ask(slot: Slot, job: Job | null, msg: WorkerRequest & { id: number }, transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    return new Promise<WorkerReply>((resolve, reject) => {
      slot.pending.set(msg.id, { id: msg.id, job, resolve, reject });
      slot.worker.ref();
      slot.worker.postMessage(msg, { transfer });
    });
  }

  /** Whether `slot` is working on `job` (a message of the job's awaits its reply). */
  busyWith(slot: Slot, job: Job): boolean {
    return [...slot.pending.values()].some((p) => p.job === job);
  }

  /** Jobs the workers hold or work on. */
  jobs(): Job[] {
    const out: Job[] = [];
    for (const slot of this.slots) {
      if (slot.heldFor) out.push(slot.heldFor);
      for (const p of slot.pending.values()) if (p.job) out.push(p.job);
    }
    return out;
  }
}
