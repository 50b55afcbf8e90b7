/**
 * "Did you mean": the live public ids closest to an unknown model id, for model_not_found. Ids
 * are case-sensitive, as OpenAI's are, so a case-only difference is suggested, never resolved.
 * A vendor prefix (`z-ai/glm-4.6`, OpenRouter's style) and a `:variant` suffix are ignored; what
 * remains is compared by edit distance, and only close ids are offered (none when nothing is).
 */
import { TURBO_SUFFIX, type ModelKind } from "./catalog";
import { catalogView, type ModelList } from "./catalog-view";

/** At most this many suggestions; ids longer than this many characters get none (bounded work). */
const MAX_SUGGESTIONS = 3;
const MAX_COMPARED_LENGTH = 128;

/** The ids GET /v1/models lists (turbo variants included), optionally of one kind; kept per version of the list. */
export function liveIds(s: ModelList, kind?: ModelKind): string[] {
  const view = catalogView(s);
  return view.memo(`live-ids:${kind ?? "any"}`, () => {
    const ids: string[] = [];
    for (const entry of view.entries().live) {
      if (kind !== undefined && entry.kind !== kind) continue;
      ids.push(entry.id);
      if (entry.turbo) ids.push(entry.id + TURBO_SUFFIX);
    }
    return ids;
  });
}

/** Levenshtein distance, stopping early once it exceeds `limit` (returns limit + 1 then). */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      row.push(v);
      if (v < best) best = v;
    }
    if (best > limit) return limit + 1;
    prev = row;
  }
  return prev[b.length]!;
}

/** The requested id as compared: lower case, without a vendor prefix or a `:variant` suffix. */
function normalized(requested: string): string {
  let id = requested.trim().toLowerCase();
  id = id.slice(id.lastIndexOf("/") + 1);
  const colon = id.indexOf(":");
  if (colon > 0) id = id.slice(0, colon);
  return id;
}

/** The candidates closest to `requested`, best first; empty when none is close. */
export function closestIds(requested: string, candidates: readonly string[]): string[] {
  if (requested.length === 0 || requested.length > MAX_COMPARED_LENGTH) return [];
  const want = normalized(requested);
  if (want.length === 0) return [];
  const wantsTurbo = want.endsWith(TURBO_SUFFIX);
  const scored: { id: string; score: number }[] = [];
  for (const id of candidates) {
    if (id === requested) continue;
    // Turbo variants are offered only to requests that asked for one; a missing turbo variant
    // gets its base id.
    if (id.endsWith(TURBO_SUFFIX) && !wantsTurbo) continue;
    const c = id.toLowerCase();
    let score: number;
    if (c === want) score = 0;
    else if (wantsTurbo && c === want.slice(0, -TURBO_SUFFIX.length)) score = 1;
    else if (want.length >= 4 && c.startsWith(want)) score = 2;
    else {
      const limit = Math.max(1, Math.min(3, Math.floor(want.length / 4)));
      const d = editDistance(want, c, limit);
      if (d > limit) continue;
      score = 2 + d;
    }
    scored.push({ id, score });
  }
  scored.sort((x, y) => x.score - y.score || x.id.localeCompare(y.id));
  // An exact match (case or prefix aside) is the answer; otherwise up to three close ids.
  if (scored[0]?.score === 0) return [scored[0].id];
  return scored.slice(0, MAX_SUGGESTIONS).map((x) => x.id);
}

/** The live ids (of `kind`, when known) to suggest for an unknown `requested` id. */
export function suggestModels(s: ModelList, requested: string, kind?: ModelKind): string[] {
  return closestIds(requested, liveIds(s, kind));
}
