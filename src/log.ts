/**
 * Structured JSON logs, one object per line on stderr. Callers pass fields, never raw headers
 * or bodies, so keys and tokens cannot end up here by accident.
 *
 * Lines at info and below (one per request) are gathered and written once per turn of the event
 * loop: one write for all the requests that finished in that turn instead of one each. A warn or
 * error line is written at once, after whatever was gathered, so lines stay in order; gathered
 * lines are also written before the process exits.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

/** Written lines waiting for the end of this turn (shared: every Log writes to the same stderr). */
let pending = "";
let scheduled = false;
/** Above this much text the gathered lines are written at once. */
const PENDING_MAX = 64 * 1024;

/** Writes every gathered line now. */
export function flushLog(): void {
  scheduled = false;
  if (pending === "") return;
  const text = pending;
  pending = "";
  process.stderr.write(text);
}
process.on("exit", flushLog);

/** The timestamp of the last line, reused while the clock still reads the same millisecond. */
let stampMs = -1;
let stamp = "";
function isoNow(): string {
  const now = Date.now();
  if (now !== stampMs) {
    stampMs = now;
    stamp = new Date(now).toISOString();
  }
  return stamp;
}

export class Log {
  private readonly threshold: number;

  constructor(level: LogLevel = "info") {
    this.threshold = LEVELS[level];
  }

  private write(level: Exclude<LogLevel, "silent">, msg: string, fields?: Record<string, unknown>, always = false): void {
    if (LEVELS[level] < this.threshold && !(always && this.threshold < LEVELS.silent)) return;
    // The fields object is serialised as it is and joined after the fixed head: no copy of it.
    const tail = fields === undefined ? "}" : JSON.stringify(fields);
    pending += `{"time":"${isoNow()}","level":"${level}","msg":${JSON.stringify(msg)}${tail.length > 2 ? "," + tail.slice(1) : "}"}\n`;
    if (always || LEVELS[level] >= LEVELS.warn || pending.length > PENDING_MAX) flushLog();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flushLog);
    }
  }

  /** Whether a line at `level` would be written: lets hot paths skip building its fields. */
  enabled(level: Exclude<LogLevel, "silent">): boolean {
    return LEVELS[level] >= this.threshold;
  }

  debug(msg: string, fields?: Record<string, unknown>) { this.write("debug", msg, fields); }
  info(msg: string, fields?: Record<string, unknown>) { this.write("info", msg, fields); }
  warn(msg: string, fields?: Record<string, unknown>) { this.write("warn", msg, fields); }
  error(msg: string, fields?: Record<string, unknown>) { this.write("error", msg, fields); }
  /** An info line written at every level but silent, at once: the start-up address an operator needs. */
  notice(msg: string, fields?: Record<string, unknown>) { this.write("info", msg, fields, true); }
}
