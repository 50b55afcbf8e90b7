/**
 * How much of one CPU core the long-count worker may take over time. Long counts (count_tokens,
 * prompts over SHORT_PROMPT_CHARS, long relayed outputs) are background work, and free work for
 * count_tokens: one account sending 8 MiB of random base64 again and again (about 1 MB/s to
 * count) would otherwise keep a core busy without pause. Lowering the thread's priority is not
 * enough: measured on a 2-vCPU virtual machine, an fsync took 0.08 ms with a core idle and 8 ms
 * with none, whatever the busy threads' priority (even SCHED_IDLE), because the hypervisor's disk
 * work waits for a host CPU too; every charge waits for an fsync, so another account's chat
 * answered 3x slower. Resting between steps leaves a core idle part of the time.
 *
 * A token bucket of work time: wall time earns `percent` of itself as credit, up to `burstMs`; each
 * step spends what it took (a step runs at 100 percent, so it costs `100 - percent` of its time). A count shorter than the burst (1 MB of prose: about 50 ms) runs at
 * full speed; a sustained flood runs at `percent` of a core. Debt is rested off only once it is
 * worth a timer (MIN_REST_MS), so steps of a fraction of a millisecond are not each followed by a
 * whole-millisecond sleep; the long-run share stays exact.
 */

/** Rests shorter than this are carried over as debt: a timer cannot sleep less than about 1 ms. */
const MIN_REST_MS = 2;

export class DutyCycle {
  private readonly rate: number;
  private credit: number;
  private last: number;

  constructor(
    percent: number,
    private readonly burstMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.rate = Math.min(100, Math.max(1, percent)) / 100;
    this.credit = burstMs;
    this.last = now();
  }

  /** A step took `workedMs`: the milliseconds to rest before the next one (0: go on now). */
  worked(workedMs: number): number {
    if (this.rate >= 1) return 0;
    const t = this.now();
    // Idle time refills the bucket up to the burst; the step's own time earns its share as it spends.
    const idle = Math.max(0, t - this.last - workedMs);
    this.credit = Math.min(this.burstMs, this.credit + idle * this.rate) - workedMs * (1 - this.rate);
    this.last = t;
    if (this.credit >= 0) return 0;
    // Resting r ms earns r * rate: enough to clear the debt.
    const rest = -this.credit / this.rate;
    return rest >= MIN_REST_MS ? rest : 0;
  }
}
