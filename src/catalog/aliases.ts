/**
 * Model aliases (SWITCHYARD_MODEL_ALIASES): client-side model ids mapped to public ids, so agent
 * CLIs that ask for their own model names (`claude-sonnet-4-5-20250929`, `claude-haiku-…`,
 * `gpt-5-codex`) need no per-model settings. A JSON object of alias → public id, inline or in a
 * file that is re-read when it changes (a broken edit keeps the last good aliases):
 *
 *   { "claude-sonnet-4-5*": "glm-4.6", "claude-haiku-*": "minimax-m2", "gpt-5*": "glm-4.6" }
 *
 * Keys are exact ids or globs (`*` any run of characters, `?` one character). An exact key wins,
 * then the first matching glob in the document's order. A real catalog id is never aliased.
 * Aliases are not models: they are not listed, and a request is billed and reported as its target.
 */
import { ConfigDocument } from "../config-document";

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

  /** Throws AliasesError when the document is invalid (start-up names the variable). */
  constructor(
    source: string | null,
    private readonly onReloadError: (message: string) => void = () => {},
  ) {
    this.document = source === null ? null : new ConfigDocument(source);
    if (this.document) this.table = this.document.load(parseAliases, () => new AliasesError(CANNOT_READ));
  }

  /** Re-reads the file when it changed; a broken edit keeps the last good aliases. */
  private refresh(): void {
    const next = this.document!.reload(parseAliases, (err) => {
      const why = err instanceof AliasesError ? err.message : CANNOT_READ;
      this.onReloadError(`SWITCHYARD_MODEL_ALIASES: reload failed, keeping the previous aliases: ${why}`);
    });
    if (next) this.table = next;
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
