/**
 * Byte-pair merging on integer ids, for the embedding tokenizer's BPE model. @huggingface/tokenizers
 * (pure JS) merges with a priority queue keyed by JSON.stringify([left, right]) and objects per
 * symbol: ~140 µs for one 150-character text EmbeddingGemma has never seen (its LRU cache makes a
 * repeated text cheap, which is why a benchmark with one fixed text did not show it). Here the
 * merge table is a hash table from a pair of ids to its rank and result, and the word is a few
 * typed arrays with a binary heap of candidate merges: the same merges, in the same order (lowest
 * rank first, the leftmost on a tie), so the same tokens (tokenizer-fast.test.ts checks against
 * the library).
 */

/**
 * The merge table: (left id, right id) → rank · 2^20 + merged id, in an open-addressing hash
 * table on typed arrays (a Map keyed by left · stride + right, past 2^31, hashed doubles and was
 * a third of the merging time).
 */
class PairTable {
  private readonly left: Int32Array;
  private readonly right: Int32Array;
  private readonly value: Float64Array;
  private readonly mask: number;

  constructor(entries: number) {
    let size = 1024;
    while (size < entries * 2) size *= 2;
    this.left = new Int32Array(size).fill(-1);
    this.right = new Int32Array(size);
    this.value = new Float64Array(size);
    this.mask = size - 1;
  }

  private slot(a: number, b: number): number {
    return (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b)) & this.mask;
  }

  /** Keeps the first value stored for a pair (the lowest rank, as merges are added in rank order). */
  add(a: number, b: number, v: number): void {
    for (let i = this.slot(a, b); ; i = (i + 1) & this.mask) {
      if (this.left[i] === -1) {
        this.left[i] = a;
        this.right[i] = b;
        this.value[i] = v;
        return;
      }
      if (this.left[i] === a && this.right[i] === b) return;
    }
  }

  /** The value of (a, b), or -1. */
  get(a: number, b: number): number {
    for (let i = this.slot(a, b); ; i = (i + 1) & this.mask) {
      const l = this.left[i]!;
      if (l === -1) return -1;
      if (l === a && this.right[i] === b) return this.value[i]!;
    }
  }
}

/** Ids for every string the merges mention; strings outside the vocabulary get ids past it. */
export class BpeMerges {
  private readonly table: PairTable;
  private readonly extraIds = new Map<string, number>();
  private readonly extraStrings: string[] = [];
  private readonly stride: number;

  constructor(
    private readonly vocab: Map<string, number>,
    private readonly strings: readonly string[],
    merges: readonly (readonly [string, string])[],
  ) {
    // Ids past the vocabulary for merge strings it lacks (none in a well-formed tokenizer.json).
    const id = (s: string) => this.vocab.get(s) ?? this.extraIds.get(s) ?? this.addExtra(s);
    const pairs: [number, number, number][] = merges.map(([a, b]) => [id(a), id(b), id(a + b)]);
    this.stride = strings.length + this.extraStrings.length;
    if (this.stride >= 2 ** 20 || merges.length >= 2 ** 26) throw new RangeError("vocabulary or merges too large for the id table");
    this.table = new PairTable(pairs.length);
    pairs.forEach(([a, b, m], rank) => this.table.add(a, b, rank * 2 ** 20 + m));
  }

  private addExtra(s: string): number {
    const id = this.strings.length + this.extraStrings.length;
    this.extraIds.set(s, id);
    this.extraStrings.push(s);
    return id;
  }

  private stringOf(id: number, unknown: readonly string[]): string {
    if (id < this.strings.length) return this.strings[id]!;
    if (id < this.stride) return this.extraStrings[id - this.strings.length]!;
    return unknown[id - this.stride]!;
  }

  /** The pieces `word` merges into (strings, some maybe outside the vocabulary: the caller's byte fallback handles them). */
  merge(word: string): string[] {
    const ids: number[] = [];
    const unknown: string[] = [];
    for (const ch of word) {
      const known = this.vocab.get(ch) ?? this.extraIds.get(ch);
      if (known !== undefined) ids.push(known);
      else {
        // A character no merge mentions: it stays a piece of its own.
        ids.push(this.stride + unknown.length);
        unknown.push(ch);
      }
    }
    const n = ids.length;
    if (n > 1) this.mergeIds(ids);
    const out: string[] = [];
    for (let i = 0; i < n; i++) if (ids[i]! >= 0) out.push(this.stringOf(ids[i]!, unknown));
    return out;
  }

  /**
   * Merges in place: ids[i] becomes the merged id at the left symbol's slot and -1 at the slots it
   * absorbed. A heap of (rank, position) candidates; a popped candidate is skipped when either
   * side changed since it was pushed.
   */
  private mergeIds(ids: number[]): void {
    const n = ids.length;
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    // Heap of candidates as numbers: rank · 2^26 + position (positions < 2^26: texts are far shorter).
    const heap: number[] = [];
    const push = (pos: number) => {
      const r = next[pos]!;
      if (r < 0) return;
      const hit = this.table.get(ids[pos]!, ids[r]!);
      if (hit < 0) return;
      let i = heap.push(Math.floor(hit / 2 ** 20) * 2 ** 26 + pos) - 1;
      const v = heap[i]!;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (heap[p]! <= v) break;
        heap[i] = heap[p]!;
        i = p;
      }
      heap[i] = v;
    };
    const pop = (): number => {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= heap.length) break;
          const c = l + 1 < heap.length && heap[l + 1]! < heap[l]! ? l + 1 : l;
          if (heap[c]! >= last) break;
          heap[i] = heap[c]!;
          i = c;
        }
        heap[i] = last;
      }
      return top;
    };
    for (let i = 0; i + 1 < n; i++) push(i);
    while (heap.length > 0) {
      const top = pop();
      const pos = top % 2 ** 26;
      const rank = Math.floor(top / 2 ** 26);
      const r = next[pos]!;
      if (ids[pos]! < 0 || r < 0) continue;
      const hit = this.table.get(ids[pos]!, ids[r]!);
      // Stale: the pair at pos is no longer the one this candidate was pushed for.
      if (hit < 0 || Math.floor(hit / 2 ** 20) !== rank) continue;
      ids[pos] = hit % 2 ** 20;
      ids[r] = -1;
      const after = next[r]!;
      next[pos] = after;
      if (after >= 0) prev[after] = pos;
      if (prev[pos]! >= 0) push(prev[pos]!);
      push(pos);
    }
  }
}
