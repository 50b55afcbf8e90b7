/**
 * The WAL file's fsync, off the event loop (group-commit.ts): a commit made with
 * synchronous=NORMAL is on disk once an fsync of the WAL that started after it has finished.
 * One fsync runs at a time; commits made while it runs share the next one. SQLite keeps the same
 * WAL file (it only rewinds it) while any connection is open, so one descriptor serves for the
 * process. A descriptor whose fsync failed is closed unsynced and never used again (see
 * group-commit.ts on why a failed fsync is final).
 */
import { closeSync, fsync as nodeFsync, fsyncSync, openSync } from "node:fs";

export type FsyncFn = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

export class WalSync {
  private fd: number | null = null;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  /** Set by close(): every later sync is refused with it. */
  private closedBecause: Error | null = null;

  constructor(
    private readonly walPath: string,
    private readonly fsync: FsyncFn = nodeFsync,
  ) {}

  /** Resolves once an fsync of the WAL that started after this call has finished. */
  durable(): Promise<void> {
    if (!this.syncing) {
      this.syncing = this.fsyncNow().finally(() => {
        this.syncing = null;
      });
      return this.syncing;
    }
    if (!this.nextSync) {
      const next = () => {
        this.nextSync = null;
        return this.durable();
      };
      this.nextSync = this.syncing.then(next, next);
    }
    return this.nextSync;
  }

  /** Syncs in line (shutdown); a failure is ignored there, since nothing more can be done about it. */
  syncBlocking(): void {
    if (this.fd === null || this.closedBecause) return;
    try {
      fsyncSync(this.fd);
    } catch {
      // The commits themselves happened; at shutdown there is no one left to tell.
    }
  }

  /** Closes the descriptor, unsynced; every later sync is refused with `why`. */
  close(why: Error): void {
    this.closedBecause ??= why;
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // Already failing or shutting down; the descriptor is dropped either way.
    }
    this.fd = null;
  }

  private fsyncNow(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.closedBecause) {
        reject(this.closedBecause);
        return;
      }
      try {
        // The WAL exists once the first commit wrote to it.
        this.fd ??= openSync(this.walPath, "r+");
      } catch (error) {
        reject(error);
        return;
      }
      this.fsync(this.fd, (error) => (error ? reject(error) : resolve()));
    });
  }
}
