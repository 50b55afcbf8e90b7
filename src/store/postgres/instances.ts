/**
 * The instance registry: every instance sharing the database registers a row, heartbeats it on
 * the database's clock, and — as a survivor — releases the holds and concurrency slots of any
 * instance whose heartbeat is older than that instance's own timeout (SWITCHYARD_INSTANCE_TIMEOUT_SECONDS,
 * default 15 s). Release happens exactly once (the dead instance's row is taken FOR UPDATE SKIP
 * LOCKED, see migration 004), and never to a live instance: a heartbeat in progress holds the
 * row, and the expiry is re-checked on the newest row.
 *
 * Identity: `name` is stable across restarts of the same instance (the caller derives it from
 * its data directory), `id` is new for every run. A restarted instance releases what its
 * previous runs left behind at once (releasePrevious), without waiting for the timeout.
 *
 * An instance that finds itself released (it stalled or was cut off from the database for longer
 * than its timeout, and a survivor gave its holds back) registers again under a new id: what it
 * had in flight can no longer be charged (its holds are gone), and it carries on with new work.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { PgDatabase } from "./database";
import { nowSeconds } from "../../accounts/accounts";

export interface InstanceIdentity {
  /** This run's id; changes when the instance had to register again. */
  readonly id: string;
  /** Stable across restarts of the same instance. */
  readonly name: string;
  /** A write found this run released: register again now rather than at the next beat. */
  noticeReleased?(): void;
}

export interface Released {
  instanceId: string;
  holdsVoided: number;
  slotsReleased: number;
}

export interface RegistryOptions {
  name: string;
  timeoutMs: number;
  /** Heartbeat and survivor pass interval (default timeout / 3: three missed beats before expiry). */
  intervalMs?: number;
  /** A survivor pass released a dead instance's holds and slots. */
  onReleasedOther?: (r: Released) => void;
  /** This instance found itself released and registered again under `newId`. */
  onReregistered?: (oldId: string, newId: string) => void;
  /** A heartbeat or pass failed (the database is away): logged by the caller, retried next beat. */
  onError?: (e: unknown) => void;
}

function newInstanceId(name: string): string {
  return `${name}.${randomBytes(6).toString("hex")}`;
}

export class InstanceRegistry implements InstanceIdentity {
  id: string;
  readonly name: string;
  private timer: ReturnType<typeof setInterval> | null = null;
  private beating = false;
  private stopped = false;
  /** Since when heartbeats have succeeded without a gap (null: the last one failed). */
  private healthySince: number | null = null;

  constructor(private readonly db: PgDatabase, private readonly opts: RegistryOptions) {
    this.name = opts.name;
    this.id = newInstanceId(opts.name);
  }

  get intervalMs(): number {
    return this.opts.intervalMs ?? Math.max(200, Math.floor(this.opts.timeoutMs / 3));
  }

  /** Inserts this run's row (alive from now on). */
  async register(id: string = this.id): Promise<void> {
    this.healthySince = Date.now();
    await this.db.run((sql) => sql`
      INSERT INTO instances (id, name, host, pid, timeout_ms) VALUES (${id}, ${this.name}, ${hostname()}, ${process.pid}, ${this.opts.timeoutMs})`);
  }

  /** Releases what previous runs of this instance (same name) left behind; returns the holds voided. */
  async releasePrevious(): Promise<{ holdsVoided: number; slotsReleased: number }> {
    const [row] = (await this.db.run((sql) => sql`
      SELECT holds_voided, slots_released FROM switchyard_release_previous(${this.id}, ${this.name}, ${nowSeconds()})`)) as {
      holds_voided: number;
      slots_released: number;
    }[];
    return { holdsVoided: row?.holds_voided ?? 0, slotsReleased: row?.slots_released ?? 0 };
  }

  /** One survivor pass: releases every expired instance; returns what was released. */
  async reap(): Promise<Released[]> {
    const rows = (await this.db.run((sql) => sql`
      SELECT instance_id, holds_voided, slots_released FROM switchyard_reap(${this.id}, ${nowSeconds()})`)) as {
      instance_id: string;
      holds_voided: number;
      slots_released: number;
    }[];
    return rows.map((r) => ({ instanceId: r.instance_id, holdsVoided: r.holds_voided, slotsReleased: r.slots_released }));
  }

  /**
   * Heartbeat, then a survivor pass; registers again if this run was released. The pass runs
   * only once this instance has itself been heartbeating for a full timeout: after a cut from the
   * database (which stopped everyone's heartbeats alike), live instances first get the time to
   * beat again — so nothing of a live instance is released because the database was away.
   */
  async beat(): Promise<void> {
    if (this.beating || this.stopped) return;
    this.beating = true;
    try {
      const alive = await this.heartbeatWithin(this.intervalMs);
      if (!alive) {
        // The new id is used only once its row exists: no write goes out under an unknown id.
        const oldId = this.id;
        const newId = newInstanceId(this.name);
        await this.register(newId);
        this.id = newId;
        this.opts.onReregistered?.(oldId, newId);
      }
      this.healthySince ??= Date.now();
      if (Date.now() - this.healthySince < this.opts.timeoutMs) return;
      for (const r of await this.reap()) this.opts.onReleasedOther?.(r);
    } catch (e) {
      this.healthySince = null;
      this.opts.onError?.(e);
    } finally {
      this.beating = false;
    }
  }

  noticeReleased(): void {
    void this.beat();
  }

  /** One heartbeat, answered within `ms`; false when this run had been released (it then registers again). */
  private async heartbeatWithin(ms: number): Promise<boolean> {
    const [row] = (await this.db.run((sql) => sql`SELECT switchyard_heartbeat(${this.id}) AS alive`, ms)) as { alive: boolean }[];
    return row?.alive === true;
  }

  /** Heartbeats and survivor passes every intervalMs until stop(). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    this.timer.unref?.();
  }

  /** Stops heartbeating without releasing anything, as a crash would (the database then expires it). */
  halt(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Stops heartbeating and releases this run (its holds and slots, if any are left, and its
   * row), so nobody waits for its timeout after a clean shutdown.
   */
  async stop(): Promise<void> {
    this.halt();
    await this.db.run((sql) => sql`SELECT * FROM switchyard_release_instance(${this.id}, ${nowSeconds()})`);
  }
}
