/**
 * The token workers' queue policy: one lane per account, served round-robin. Each turn gives the
 * job at the head of one account's lane one step of counting, then moves on to the next account
 * with work, so an account with a long backlog (32 counts of 8 MiB) takes one slice in turn like
 * any other, and another account's 40 KB prompt is counted after a few slices, not after the
 * backlog. Within an account, jobs run in arrival order. Kept apart from the worker's messages
 * and timers so the order can be tested table-style (queue.test.ts).
 */

export class FairQueue<T> {
  private readonly lanes = new Map<string, T[]>();
  /**
   * Accounts whose lane was empty until now, served first, in arrival order (as FQ-CoDel serves
   * new flows): an account that sends now and then is not made to wait a round behind backlogs.
   * After its turn an account with more queued joins `old`.
   */
  private readonly fresh: string[] = [];
  /** Accounts with a backlog, in turn order: the head is served, then goes to the back. */
  private readonly old: string[] = [];
  private count = 0;

  /** Jobs queued, over all accounts. */
  get size(): number {
    return this.count;
  }

  /** Queues a job at the end of its account's lane. */
  push(account: string, item: T): void {
    let lane = this.lanes.get(account);
    if (!lane) {
      lane = [];
      this.lanes.set(account, lane);
      this.fresh.push(account);
    }
    lane.push(item);
    this.count++;
  }

  /** The job whose turn it is (the head of the lane of the account up now), or undefined when empty. */
  peek(): T | undefined {
    const account = this.up();
    return account === undefined ? undefined : this.lanes.get(account)![0];
  }

  /** The job from peek() had its turn: `done` removes it; either way the next account is up. */
  turn(done: boolean): void {
    const account = this.up();
    if (account === undefined) return;
    (this.fresh.length > 0 ? this.fresh : this.old).shift();
    const lane = this.lanes.get(account)!;
    if (done) {
      lane.shift();
      this.count--;
    }
    if (lane.length > 0) this.old.push(account);
    else this.lanes.delete(account);
  }

  /** Takes a job out wherever it is (its caller went away); false when it was not queued. */
  remove(account: string, item: T): boolean {
    const lane = this.lanes.get(account);
    const i = lane ? lane.indexOf(item) : -1;
    if (!lane || i < 0) return false;
    lane.splice(i, 1);
    this.count--;
    if (lane.length === 0) {
      this.lanes.delete(account);
      for (const list of [this.fresh, this.old]) {
        const at = list.indexOf(account);
        if (at >= 0) list.splice(at, 1);
      }
    }
    return true;
  }

  private up(): string | undefined {
    return this.fresh[0] ?? this.old[0];
  }
}
