/**
 * A configuration document given as inline JSON or as the path of a JSON file
 * (SWITCHYARD_ROUTES, SWITCHYARD_MODEL_ALIASES, SWITCHYARD_CATALOG). A file is read off the event
 * loop, a regular file of at most CONFIG_FILE_MAX_BYTES (config-file.ts), and re-read when it
 * changes, so edits apply without a restart: the check runs in the background, a request never
 * waits on it, and the caller keeps its last good version when a new one is broken.
 */
import { configFileStamp, ConfigFileError, readConfigFile } from "./config-file";

/** How often a file's stamp is checked, at most. */
export const RELOAD_CHECK_MS = 200;

/** Inline JSON (an object) rather than a file path. */
export function isInlineDocument(value: string): boolean {
  return value.trimStart().startsWith("{");
}

/** Why a file cannot be read, in a few words (never its contents). */
export function unreadable(err: unknown): string {
  return err instanceof ConfigFileError ? err.message : "cannot read it";
}

export class ConfigDocument {
  private stamp: string | null = null;
  private lastCheck = 0;
  private checking: Promise<void> | null = null;

  constructor(private readonly source: string) {}

  /** The file's path, or null for inline JSON. */
  get path(): string | null {
    return isInlineDocument(this.source) ? null : this.source;
  }

  /** The document's text now; throws ConfigFileError when its file cannot be used. */
  async read(): Promise<string> {
    const path = this.path;
    if (path === null) return this.source;
    this.stamp = await configFileStamp(path);
    return readConfigFile(path);
  }

  /** The document parsed now: a file that cannot be read throws `cannotRead(why)`, a bad one what `parse` throws. */
  async load<T>(parse: (text: string) => T | Promise<T>, cannotRead: (why: string) => Error): Promise<T> {
    let text: string;
    try {
      text = await this.read();
    } catch (e) {
      throw cannotRead(unreadable(e));
    }
    return parse(text);
  }

  /**
   * Checks the file for a change (at most every RELOAD_CHECK_MS; inline JSON never changes), in
   * the background: when it changed, it is read and parsed there and the new value handed to
   * `apply`; a file that cannot be read or parsed goes to `broken` instead, and is not offered
   * again until it changes. A file briefly absent while it is replaced has not changed. Returns
   * the check under way (null when none was started), for a caller that wants to wait for it.
   */
  reloadInBackground<T>(parse: (text: string) => T | Promise<T>, apply: (value: T) => void, broken: (err: unknown) => void, now = Date.now()): Promise<void> | null {
    const path = this.path;
    if (path === null || this.checking !== null || now - this.lastCheck < RELOAD_CHECK_MS) return null;
    this.lastCheck = now;
    this.checking = (async () => {
      try {
        const stamp = await configFileStamp(path);
        if (stamp === null || stamp === this.stamp) return;
        this.stamp = stamp;
        apply(await parse(await readConfigFile(path)));
      } catch (err) {
        broken(err);
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }
}
