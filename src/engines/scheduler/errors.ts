/** Errors a Scheduler rejects jobs with; routes map them to HTTP statuses. */

/** The queue holds maxQueue jobs already: the route answers 503 with Retry-After. */
export class QueueFullError extends Error {
  constructor(readonly scheduler: string, readonly maxQueue: number) {
    super(`${scheduler}: queue is full (${maxQueue} jobs waiting)`);
    this.name = "QueueFullError";
  }
}

/** The job's AbortSignal fired before its batch started; named like the DOM's AbortError. */
export class JobAbortedError extends Error {
  constructor(readonly scheduler: string) {
    super(`${scheduler}: job cancelled before it ran`);
    this.name = "AbortError";
  }
}

/** The scheduler was closed (shutdown or engine unload) while the job waited. */
export class SchedulerClosedError extends Error {
  constructor(readonly scheduler: string) {
    super(`${scheduler}: scheduler closed`);
    this.name = "SchedulerClosedError";
  }
}
