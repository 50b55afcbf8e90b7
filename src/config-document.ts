/**
 * A configuration document given as inline JSON or as the path of a JSON file
 * (SWITCHYARD_ROUTES, SWITCHYARD_MODEL_ALIASES). A file is re-read when it changes, so edits
 * apply without a restart; the caller keeps its last good version when a new one is broken.
 */
import { readFileSync, statSync } from "node:fs";

/** How often a file's stamp is checked, at most. */
export const RELOAD_CHECK_MS = 200;

/** Inline JSON (an object) rather than a file path. */
export function isInlineDocument(value: string): boolean {
  return value.trimStart().startsWith("{");
}

function stampOf(path: string): string {
  const st = statSync(path);
  return `${st.mtimeMs}:${st.size}:${st.ino}`;
}

export class ConfigDocument {
  private stamp = "";
  private lastCheck = 0;

  constructor(private readonly source: string) {}

  /** The file's path, or null for inline JSON. */
  get path(): string | null {
    return isInlineDocument(this.source) ? null : this.source;
  }

  /** The document's text now; throws when its file cannot be read. */
  read(): string {
    const path = this.path;
    if (path === null) return this.source;
    this.stamp = stampOf(path);
    return readFileSync(path, "utf8");
  }

  /** The document parsed now: a file that cannot be read throws `cannotRead()`, a bad one what `parse` throws. */
  load<T>(parse: (text: string) => T, cannotRead: () => Error): T {
    let text: string;
    try {
      text = this.read();
    } catch {
      throw cannotRead();
    }
    return parse(text);
  }

  /**
   * The document parsed again when its file changed; null when it did not, or when the new version
   * cannot be read or parsed — `broken` then hears why, and the caller keeps its last good value.
   */
  reload<T>(parse: (text: string) => T, broken: (err: unknown) => void): T | null {
    try {
      const text = this.changed();
      return text === null ? null : parse(text);
    } catch (err) {
      broken(err);
      return null;
    }
  }

  /**
   * The file's text when it changed since the last read, else null (inline JSON never changes;
   * checked at most every RELOAD_CHECK_MS; a file briefly absent while it is replaced has not
   * changed). Throws when it changed but cannot be read — the change is then not offered again.
   */
  changed(now = Date.now()): string | null {
    const path = this.path;
    if (path === null || now - this.lastCheck < RELOAD_CHECK_MS) return null;
    this.lastCheck = now;
    let stamp: string;
    try {
      stamp = stampOf(path);
    } catch {
      return null;
    }
    if (stamp === this.stamp) return null;
    this.stamp = stamp;
    return readFileSync(path, "utf8");
  }
}
