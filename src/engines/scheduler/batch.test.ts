import { describe, expect, test } from "bun:test";
import { batchIsFull, fairOrder, selectBatch, type Candidate } from "./batch";

const jobs = (...costs: number[]): Candidate[] => costs.map((cost, seq) => ({ cost, seq }));
const seqs = (c: Candidate[]) => c.map((x) => x.seq);

describe("selectBatch", () => {
  const cases: { name: string; prio: number[]; normal: number[]; size: number; tokens: number; want: number[] }[] = [
    { name: "empty queue", prio: [], normal: [], size: 4, tokens: 100, want: [] },
    { name: "takes all when within limits, sorted by cost", prio: [], normal: [5, 1, 3], size: 8, tokens: 100, want: [1, 2, 0] },
    { name: "batch size bound", prio: [], normal: [1, 1, 1, 1, 1], size: 3, tokens: 100, want: [0, 1, 2] },
    { name: "token budget bound skips big, keeps small", prio: [], normal: [10, 95, 20], size: 8, tokens: 40, want: [0, 2] },
    { name: "oldest always runs even above budget, alone", prio: [], normal: [500, 10], size: 8, tokens: 100, want: [0] },
    { name: "prefers lengths close to the anchor", prio: [], normal: [10, 100, 11, 90, 12], size: 3, tokens: 1000, want: [0, 2, 4] },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const p = c.prio.map((cost, i) => ({ cost, seq: 1000 + i }));
      const n = jobs(...c.normal);
      expect(seqs(selectBatch(p, n, { maxBatchSize: c.size, maxBatchTokens: c.tokens }))).toEqual(c.want);
    });
  }

  test("priority lane is anchored and filled first", () => {
    const p = [{ cost: 50, seq: 10 }, { cost: 5, seq: 11 }];
    const n = jobs(50, 50, 50);
    const b = selectBatch(p, n, { maxBatchSize: 3, maxBatchTokens: 1000 });
    expect(seqs(b)).toEqual([11, 0, 10]);
  });
});

describe("batchIsFull", () => {
  test.each([
    [[1, 1], 3, 100, false],
    [[1, 1, 1], 3, 100, true],
    [[60, 40], 8, 100, true],
    [[60, 39], 8, 100, false],
  ] as [number[], number, number, boolean][])("%p size %d budget %d → %p", (costs, size, tokens, want) => {
    expect(batchIsFull(jobs(...costs), { maxBatchSize: size, maxBatchTokens: tokens })).toBe(want);
  });
});

describe("fairOrder", () => {
  const job = (account: string, seq: number): Candidate => ({ cost: 1, seq, account });
  const cases: { name: string; lane: Candidate[]; served: [string, number][]; want: number[] }[] = [
    { name: "nobody served yet: arrival order", lane: [job("A", 0), job("B", 1), job("A", 2)], served: [], want: [0, 1, 2] },
    { name: "the account served last goes last", lane: [job("A", 0), job("A", 1), job("B", 2)], served: [["A", 1]], want: [2, 0, 1] },
    { name: "least recently served first, oldest first within it", lane: [job("A", 0), job("B", 1), job("C", 2), job("B", 3)], served: [["A", 3], ["B", 2], ["C", 1]], want: [2, 1, 3, 0] },
    { name: "an account never served comes before every served one", lane: [job("A", 0), job("B", 1), job("D", 5)], served: [["A", 1], ["B", 2]], want: [5, 0, 1] },
  ];
  for (const c of cases) test(c.name, () => expect(seqs(fairOrder(c.lane, new Map(c.served)))).toEqual(c.want));
});
