/**
 * Image decoding counted against the account that asked for it (docs/chat.md, "Images"):
 *
 * - A fair queue: at most `concurrency` decodes run at once, and when a slot frees the next job is
 *   taken from the waiting account with the fewest decodes running, then the one served least
 *   recently (an account new to the queue first), so one account's hundred images wait behind
 *   another account's one rather than in front of it.
 * - A budget of decode time per account: each account may use `msPerMinute` milliseconds of
 *   decoding per minute (a bucket that refills continuously, so there is no window edge to game).
 *   The time a decode takes is charged after it ran; an account whose bucket is empty gets 429
 *   rate_limited, with a Retry-After of when it has time again, before any more of its images
 *   are decoded.
 *
 * In memory, per instance (as the in-memory request limits are).
 */
import { DomainError } from "../errors";

interface Job {
  run(): Promise<void>;
}

interface Waiting {
  jobs: Job[];
  running: number;
  /** When this account last started a decode (a sequence number; 0: not yet). */
  lastStart: number;
}

interface Bucket {
  /** Milliseconds of decoding left; negative after a decode that cost more than was left. */
  level: number;
  at: number;
}

export class DecodeQueue {
  private running = 0;
  private started = 0;
  /** Accounts with jobs waiting or running. */
  private readonly accounts = new Map<string, Waiting>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly concurrency: number,
    private readonly msPerMinute: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Runs `decode` for `account` when its turn comes; rejects with 429 when the account has used
   * its decoding time. The decode's own time is charged to the account.
   */
  run<T>(account: string, decode: () => Promise<T>): Promise<T> {
    try {
      this.checkBudget(account);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        run: async () => {
          // The budget is checked again at the start: earlier jobs of the account may have used it.
          try {
            this.checkBudget(account);
          } catch (err) {
            this.done(account);
            return reject(err);
          }
          const startedAt = this.now();
          let outcome: { ok: true; value: T } | { ok: false; error: unknown };
          try {
            outcome = { ok: true, value: await decode() };
          } catch (error) {
            outcome = { ok: false, error };
          }
          // Charged before the caller hears of it: its next image sees the time used.
          this.charge(account, this.now() - startedAt);
          this.done(account);
          if (outcome.ok) resolve(outcome.value);
          else reject(outcome.error);
        },
      };
      let w = this.accounts.get(account);
      if (!w) this.accounts.set(account, (w = { jobs: [], running: 0, lastStart: 0 }));
      w.jobs.push(job);
      this.pump();
    });
  }

  /** Decodes running now, and jobs waiting (for tests and metrics). */
  get stats(): { running: number; waiting: number } {
    let waiting = 0;
    for (const w of this.accounts.values()) waiting += w.jobs.length;
    return { running: this.running, waiting };
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      let next: Waiting | null = null;
      for (const w of this.accounts.values()) {
        if (w.jobs.length === 0) continue;
        if (!next || w.running < next.running || (w.running === next.running && w.lastStart < next.lastStart)) next = w;
      }
      if (!next) return;
      next.running++;
      next.lastStart = ++this.started;
      this.running++;
      void next.jobs.shift()!.run();
    }
  }

  private done(account: string): void {
    this.running--;
    const w = this.accounts.get(account)!;
    w.running--;
    if (w.running === 0 && w.jobs.length === 0) this.accounts.delete(account);
    this.pump();
  }

  private bucket(account: string): Bucket {
    const now = this.now();
    let b = this.buckets.get(account);
    if (!b) {
      b = { level: this.msPerMinute, at: now };
      this.buckets.set(account, b);
    } else {
      b.level = Math.min(this.msPerMinute, b.level + ((now - b.at) * this.msPerMinute) / 60_000);
      b.at = now;
    }
    return b;
  }

  private checkBudget(account: string): void {
    const b = this.bucket(account);
    if (b.level > 0) return;
    const waitMs = (-b.level * 60_000) / this.msPerMinute;
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    throw new DomainError(
      "rate_limited",
      "image_decode_limit_exceeded",
      `Image decoding for this account is limited to ${this.msPerMinute} ms per minute, and that time is used up; retry in ${retryAfter} s, or send fewer or smaller images.`,
      null,
      retryAfter,
    );
  }

  private charge(account: string, ms: number): void {
    const b = this.bucket(account);
    b.level -= ms;
    // A full bucket is the default state: refilled ones are forgotten, so idle accounts cost no memory.
    if (this.buckets.size > 1024) {
      for (const [id] of this.buckets) if (this.bucket(id).level >= this.msPerMinute) this.buckets.delete(id);
    }
  }
}
