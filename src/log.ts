/**
 * Structured JSON logs, one object per line on stderr. Callers pass fields, never raw headers
 * or bodies, so keys and tokens cannot end up here by accident.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

export class Log {
  private readonly threshold: number;

  constructor(level: LogLevel = "info") {
    this.threshold = LEVELS[level];
  }

  private write(level: Exclude<LogLevel, "silent">, msg: string, fields?: Record<string, unknown>): void {
    if (LEVELS[level] < this.threshold) return;
    process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + "\n");
  }

  /** Whether a line at `level` would be written: lets hot paths skip building its fields. */
  enabled(level: Exclude<LogLevel, "silent">): boolean {
    return LEVELS[level] >= this.threshold;
  }

  debug(msg: string, fields?: Record<string, unknown>) { this.write("debug", msg, fields); }
  info(msg: string, fields?: Record<string, unknown>) { this.write("info", msg, fields); }
  warn(msg: string, fields?: Record<string, unknown>) { this.write("warn", msg, fields); }
  error(msg: string, fields?: Record<string, unknown>) { this.write("error", msg, fields); }
}
