export interface Clock {
  now(): Date;
  /** The same instant in ms since the epoch, without making a Date (the request path asks several times a request). */
  millis(): number;
}

export const systemClock: Clock = { now: () => new Date(), millis: Date.now };

/** A clock that stays where it is put; tests move it to prove time rules. */
export class ManualClock implements Clock {
  constructor(private current: Date = new Date()) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  millis(): number {
    return this.current.getTime();
  }
  set(to: Date | string): void {
    this.current = new Date(to);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}
