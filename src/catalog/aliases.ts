/**
 * Model aliases (SWITCHYARD_MODEL_ALIASES): client-side model ids mapped to public ids, so agent
 * CLIs that ask for their own model names (`claude-sonnet-4-5-20250929`, `claude-haiku-…`,
 * `gpt-5-codex`) need no per-model settings. A JSON object of alias → public id, inline or in a
 * file that is re-read when it changes (a broken edit keeps the last good aliases):
 *
 *   { "claude-sonnet-4-5*": "glm-4.6", "claude-haiku-*": "minimax-m2", "gpt-5*": "glm-4.6" }
 *
 * The file is read off the event loop and re-checked in the background (config-document.ts).
 * Keys are exact ids or globs (`*` any run of characters, `?` one character). An exact key wins,
 * then the first matching glob in the document's order. A real catalog id is never aliased.
 * Aliases are not models: they are not listed, and a request is billed and reported as its target.
 */
import { ConfigDocument, unreadable } from "../config-document";

export class AliasesError extends Error {}

interface Table {
  exact: Map<string, string>;
  globs: { pattern: RegExp; target: string }[];
}

function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${body}$`);
}

/** Parses the alias document; throws AliasesError naming the bad entry. */
export function parseAliases(text: string): Table {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AliasesError("is not valid JSON");
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) throw new AliasesError('must be a JSON object of "alias": "public model id"');
  const table: Table = { exact: new Map(), globs: [] };
  for (const [alias, target] of Object.entries(json as Record<string, unknown>)) {
    if (alias.trim() === "" || alias.length > 256) throw new AliasesError(`alias ${JSON.stringify(alias)} must be 1 to 256 characters`);
    if (typeof target !== "string" || target.trim() === "") throw new AliasesError(`"${alias}" must map to a public model id (a non-empty string)`);
    if (/[*?]/.test(alias)) table.globs.push({ pattern: globToRegExp(alias), target });
    else table.exact.set(alias, target);
  }
  return table;
}

const CANNOT_READ = "cannot read the aliases file";

export class ModelAliases {
  private table: Table = { exact: new Map(), globs: [] };
  private readonly document: ConfigDocument | null;

  /** Inline JSON (or null), checked now; throws AliasesError when it is invalid. A file: ModelAliases.open. */
  constructor(
    source: string | null,
    private readonly onReloadError: (message: string) => void = () => {},
  ) {
    this.document = source === null ? null : new ConfigDocument(source);
    if (this.document !== null && this.document.path === null) this.table = parseAliases(source!);
  }

  /** The aliases of SWITCHYARD_MODEL_ALIASES, a file read off the event loop; throws AliasesError (start-up names the variable). */
  static async open(source: string | null, onReloadError: (message: string) => void = () => {}): Promise<ModelAliases> {
    const aliases = new ModelAliases(source, onReloadError);
    if (aliases.document?.path) aliases.table = await aliases.document.load(parseAliases, (why) => new AliasesError(`${CANNOT_READ} (${why})`));
    return aliases;
  }

  /** Checks the file for a change, in the background; a broken edit keeps the last good aliases. */
  private refresh(): void {
    this.document!.reloadInBackground(parseAliases, (next) => (this.table = next), (err) => {
      const why = err instanceof AliasesError ? err.message : `${CANNOT_READ} (${unreadable(err)})`;
      this.onReloadError(`SWITCHYARD_MODEL_ALIASES: reload failed, keeping the previous aliases: ${why}`);
    });
  }

  /** The public id an alias stands for, or null when `id` is no alias. */
  target(id: string): string | null {
    if (this.document === null) return null;
    this.refresh();
    const exact = this.table.exact.get(id);
    if (exact !== undefined) return exact;
    for (const g of this.table.globs) if (g.pattern.test(id)) return g.target;
    return null;
  }
}
