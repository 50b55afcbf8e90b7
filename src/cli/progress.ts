/**
 * A download progress bar on stderr: redrawn in place on a terminal (at most ~10 times a second),
 * one line per 10% otherwise (logs, CI), so output stays readable either way.
 */
import type { ProgressSink } from "../engines/model-download";

const MB = 1024 * 1024;
const fmt = (n: number) => (n / MB).toFixed(1);

export class StderrProgress implements ProgressSink {
  private label = "";
  private total: number | null = null;
  private done_ = 0;
  private startedAt = 0;
  private startBytes = 0;
  private lastDraw = 0;
  private lastDecile = -1;

  constructor(private readonly out: NodeJS.WriteStream = process.stderr, private readonly tty = Boolean(process.stderr.isTTY)) {}

  start(label: string, total: number | null, already: number): void {
    this.label = label;
    this.total = total;
    this.done_ = already;
    this.startBytes = already;
    this.startedAt = performance.now();
    this.lastDraw = 0;
    this.lastDecile = -1;
    if (already > 0) this.out.write(`${label}: resuming at ${fmt(already)} MB\n`);
    this.draw(true);
  }

  advance(bytes: number): void {
    this.done_ += bytes;
    this.draw(false);
  }

  done(): void {
    this.draw(true);
    if (this.tty) this.out.write("\n");
  }

  private line(): string {
    const secs = Math.max(0.001, (performance.now() - this.startedAt) / 1000);
    const rate = `${fmt((this.done_ - this.startBytes) / secs)} MB/s`;
    if (!this.total) return `${this.label}  ${fmt(this.done_)} MB  ${rate}`;
    const frac = Math.min(1, this.done_ / this.total);
    const width = 30;
    const filled = Math.round(frac * width);
    const bar = "#".repeat(filled) + "-".repeat(width - filled);
    return `${this.label}  [${bar}] ${(frac * 100).toFixed(0).padStart(3)}%  ${fmt(this.done_)}/${fmt(this.total)} MB  ${rate}`;
  }

  private draw(force: boolean): void {
    if (this.tty) {
      const now = performance.now();
      if (!force && now - this.lastDraw < 100) return;
      this.lastDraw = now;
      this.out.write(`\r\x1b[2K${this.line()}`);
      return;
    }
    const decile = this.total ? Math.floor((this.done_ / this.total) * 10) : -1;
    if (decile !== this.lastDecile && (decile >= 0 || force)) {
      this.lastDecile = decile;
      this.out.write(this.line() + "\n");
    }
  }
}
