import { describe, expect, test } from "bun:test";
import { MetricsRegistry } from "../../metrics/registry";
import { JobAbortedError, QueueFullError, Scheduler, SchedulerClosedError, type SchedulerOptions } from "./index";
import { DomainError } from "../../errors";

/** A run() that records its batches; with hold, each batch waits until release() is called. */
function recorder(opts: { hold?: boolean } = {}) {
  const batches: number[][] = [];
  let waiting: (() => void)[] = [];
  return {
    batches,
    /** Lets every batch currently running finish. */
    release() {
      const w = waiting;
      waiting = [];
      for (const f of w) f();
    },
    async run(batch: number[]): Promise<string[]> {
      batches.push([...batch]);
      if (opts.hold) await new Promise<void>((r) => waiting.push(r));
      return batch.map((x) => `out:${x}`);
    },
  };
}

function make(run: (b: number[]) => Promise<string[]>, o: Partial<SchedulerOptions<number, string>> = {}) {
  return new Scheduler<number, string>({ name: "t", maxBatchSize: 8, maxBatchTokens: 1000, maxWaitMs: 5, maxQueue: 100, run, ...o });
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe("Scheduler", () => {
  test("each caller gets its own output, whatever the batch order", async () => {
    const r = recorder();
    const s = make(r.run);
    const costs = [9, 1, 5, 3, 7, 2, 8, 4, 6, 10];
    const outs = await Promise.all(costs.map((c) => s.submit(c, { cost: c })));
    expect(outs).toEqual(costs.map((c) => `out:${c}`));
    // Batched (fewer runs than jobs), each batch sorted by cost.
    expect(r.batches.length).toBeLessThan(costs.length);
    for (const b of r.batches) expect(b).toEqual([...b].sort((x, y) => x - y));
  });

  test("jobs arriving while a batch runs are batched together next", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0 });
    const first = s.submit(1, { cost: 1 });
    await tick();
    expect(r.batches).toEqual([[1]]);
    const rest = [2, 3, 4].map((x) => s.submit(x, { cost: 1 }));
    expect(s.queued).toBe(3);
    r.release();
    await first;
    await tick();
    expect(r.batches[1]).toEqual([2, 3, 4]);
    r.release();
    expect(await Promise.all(rest)).toEqual(["out:2", "out:3", "out:4"]);
  });

  test("the first job waits up to maxWaitMs for company, then runs", async () => {
    const r = recorder();
    const s = make(r.run, { maxWaitMs: 30 });
    const a = s.submit(1, { cost: 1 });
    await tick(5);
    expect(r.batches.length).toBe(0);
    const b = s.submit(2, { cost: 1 });
    await Promise.all([a, b]);
    expect(r.batches).toEqual([[1, 2]]);
  });

  test("after a lone batch the next lone job does not wait; company brings the wait back", async () => {
    const r = recorder();
    const s = make(r.run, { maxWaitMs: 60_000, maxBatchSize: 2 });
    // First: a full batch (company) → waiting stays on; the lone job after it waits for company.
    await Promise.all([s.submit(1, { cost: 1 }), s.submit(2, { cost: 1 })]);
    const lone = s.submit(3, { cost: 1 });
    await tick(20);
    expect(r.batches).toEqual([[1, 2]]);
    await Promise.all([lone, s.submit(4, { cost: 1 })]);
    expect(r.batches).toEqual([[1, 2], [3, 4]]);

    // A batch that ran alone (here a turbo job, which never waits) turns the idle wait off.
    const q = make(r.run, { maxWaitMs: 60_000 });
    await q.submit(5, { cost: 1, priority: true });
    const six = q.submit(6, { cost: 1 });
    await tick();
    expect(r.batches.at(-1)).toEqual([6]);
    await six;
  });

  test("jobs submitted together (one request's inputs) run as one batch even when the idle wait is off", async () => {
    const r = recorder();
    const s = make(r.run, { maxWaitMs: 60_000 });
    await s.submit(1, { cost: 1, priority: true }); // ran alone: the idle wait is off
    await Promise.all([s.submit(2, { cost: 1 }), s.submit(3, { cost: 1 }), s.submit(4, { cost: 1 })]);
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
  });

  test("a full batch does not wait", async () => {
    const r = recorder();
    const s = make(r.run, { maxWaitMs: 60_000, maxBatchSize: 2 });
    await Promise.all([s.submit(1, { cost: 1 }), s.submit(2, { cost: 1 })]);
    expect(r.batches).toEqual([[1, 2]]);
  });

  test("batch size and token budget bound each batch", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0, maxBatchSize: 3, maxBatchTokens: 10 });
    const all = [s.submit(0, { cost: 1 })];
    await tick();
    for (let i = 1; i <= 7; i++) all.push(s.submit(i, { cost: 4 }));
    const drain = (async () => {
      while (r.batches.flat().length < 8) {
        r.release();
        await tick(1);
      }
      r.release();
    })();
    await Promise.all([...all, drain]);
    for (const b of r.batches.slice(1)) {
      expect(b.length).toBeLessThanOrEqual(3);
      expect(b.length * 4).toBeLessThanOrEqual(10);
    }
    expect(r.batches.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test("priority lane runs first and does not wait for company", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0, maxBatchSize: 1 });
    const busy = s.submit(0, { cost: 1 });
    await tick();
    const normal = s.submit(1, { cost: 1 });
    const turbo = s.submit(2, { cost: 1, priority: true });
    r.release();
    await busy;
    await tick();
    expect(r.batches[1]).toEqual([2]);
    r.release();
    await turbo;
    await tick();
    expect(r.batches[2]).toEqual([1]);
    r.release();
    await normal;

    const idle = make(recorder().run, { maxWaitMs: 60_000 });
    expect(await idle.submit(7, { cost: 1, priority: true })).toBe("out:7");
  });

  test("queue full rejects with QueueFullError without touching queued jobs", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0, maxQueue: 2 });
    const running = s.submit(0, { cost: 1 });
    await tick();
    const q = [s.submit(1, { cost: 1 }), s.submit(2, { cost: 1 })];
    await expect(s.submit(3, { cost: 1 })).rejects.toBeInstanceOf(QueueFullError);
    r.release();
    await running;
    await tick();
    r.release();
    expect(await Promise.all([running, ...q])).toEqual(["out:0", "out:1", "out:2"]);
  });

  test("admitted follow-up work is queued even when the queue is full", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0, maxQueue: 1, maxBatchSize: 1 });
    const running = s.submit(0, { cost: 1 });
    await tick();
    const queued = s.submit(1, { cost: 1 });
    await expect(s.submit(2, { cost: 1 })).rejects.toBeInstanceOf(QueueFullError);
    const followUp = s.submit(3, { cost: 1, admitted: true });
    expect(s.queued).toBe(2);
    for (let i = 0; i < 3; i++) {
      r.release();
      await tick();
    }
    expect(await Promise.all([running, queued, followUp])).toEqual(["out:0", "out:1", "out:3"]);
  });

  test("an aborted job leaves the queue and rejects with AbortError", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0 });
    const running = s.submit(0, { cost: 1 });
    await tick();
    const ac = new AbortController();
    const gone = s.submit(1, { cost: 1, signal: ac.signal });
    const kept = s.submit(2, { cost: 1 });
    expect(s.queued).toBe(2);
    ac.abort();
    await expect(gone).rejects.toBeInstanceOf(JobAbortedError);
    await gone.catch((e) => expect(e.name).toBe("AbortError"));
    expect(s.queued).toBe(1);
    r.release();
    await running;
    await tick();
    r.release();
    await kept;
    expect(r.batches.flat()).toEqual([0, 2]);

    const pre = new AbortController();
    pre.abort();
    await expect(s.submit(9, { cost: 1, signal: pre.signal })).rejects.toBeInstanceOf(JobAbortedError);
  });

  test("a failing run rejects exactly that batch; the next batch still runs", async () => {
    let calls = 0;
    const s = make(async (b) => {
      if (calls++ === 0) throw new Error("boom");
      return b.map(String);
    }, { maxWaitMs: 0 });
    await expect(s.submit(1, { cost: 1 })).rejects.toThrow("boom");
    expect(await s.submit(2, { cost: 1 })).toBe("2");
  });

  test("a run returning the wrong number of outputs rejects the batch", async () => {
    const s = make(async () => ["only-one"], { maxWaitMs: 20 });
    const both = await Promise.allSettled([s.submit(1, { cost: 1 }), s.submit(2, { cost: 1 })]);
    for (const p of both) {
      expect(p.status).toBe("rejected");
      expect(String((p as PromiseRejectedResult).reason)).toContain("outputs");
    }
  });

  test("close rejects queued jobs and refuses new ones", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxWaitMs: 0 });
    const running = s.submit(0, { cost: 1 });
    await tick();
    const waiting = s.submit(1, { cost: 1 });
    s.close();
    await expect(waiting).rejects.toBeInstanceOf(SchedulerClosedError);
    await expect(s.submit(2, { cost: 1 })).rejects.toBeInstanceOf(SchedulerClosedError);
    r.release();
    expect(await running).toBe("out:0");
  });

  test("metrics count batches, sizes, waits, depth and rejections", async () => {
    const m = new MetricsRegistry();
    const r = recorder();
    const s = make(r.run, { metrics: m, maxWaitMs: 10, maxQueue: 3, name: "emb" });
    const jobs = [1, 2, 3].map((x) => s.submit(x, { cost: 1 }));
    await expect(s.submit(4, { cost: 1 })).rejects.toBeInstanceOf(QueueFullError);
    await Promise.all(jobs);
    const text = m.render();
    expect(text).toContain('switchyard_scheduler_batches_total{scheduler="emb"} 1');
    expect(text).toContain('switchyard_scheduler_batch_size_sum{scheduler="emb"} 3');
    expect(text).toContain('switchyard_scheduler_queue_wait_seconds_count{scheduler="emb"} 3');
    expect(text).toContain('switchyard_scheduler_queue_depth{scheduler="emb"} 0');
    expect(text).toContain('switchyard_scheduler_rejected_total{reason="queue_full",scheduler="emb"} 1');
  });

  test("accounts take turns: one account's backlog does not hold another's job until it drains", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxBatchSize: 1, maxWaitMs: 0 });
    const done: string[] = [];
    const submit = (account: string, x: number) => s.submit(x, { cost: 1, account }).then(() => void done.push(`${account}${x}`));
    // A floods first (its first job starts at once); then B and C send one job each, B a second later.
    const all = [1, 2, 3, 4, 5, 6].map((x) => submit("A", x));
    await tick();
    all.push(submit("B", 1), submit("C", 1));
    for (let i = 0; i < 4; i++) {
      if (i === 1) all.push(submit("B", 2));
      r.release();
      await tick();
    }
    for (let i = 0; i < 8; i++) {
      r.release();
      await tick();
    }
    await Promise.all(all);
    // First-come-first-served would have run A1..A6 before B1 and C1.
    expect(done).toEqual(["A1", "B1", "C1", "A2", "B2", "A3", "A4", "A5", "A6"]);
  });

  test("in batches, the anchor rotates between accounts: another account's job is in the next batch", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxBatchSize: 2, maxWaitMs: 0 });
    const all = [1, 2, 3, 4, 5, 6].map((x) => s.submit(x, { cost: 1, account: "A" }));
    await tick();
    all.push(s.submit(100, { cost: 1, account: "B" }));
    r.release();
    await tick();
    expect(r.batches[1]).toContain(100);
    for (let i = 0; i < 6; i++) {
      r.release();
      await tick();
    }
    await Promise.all(all);
  });

  test("one account may hold at most maxQueuePerAccount queued jobs: 429 naming the limit; others and admitted work still queue", async () => {
    const r = recorder({ hold: true });
    const s = make(r.run, { maxBatchSize: 1, maxWaitMs: 0, maxQueuePerAccount: 2 });
    const running = s.submit(0, { cost: 1, account: "A" });
    await tick();
    const queued = [1, 2].map((x) => s.submit(x, { cost: 1, account: "A" }));
    expect(s.queuedFor("A")).toBe(2);
    const refused = await s.submit(3, { cost: 1, account: "A" }).catch((e) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused.kind).toBe("rate_limited");
    expect(refused.message).toContain("already has 2 jobs waiting for the model 't'");
    const later = s.submit(4, { cost: 1, account: "A", admitted: true });
    const other = s.submit(5, { cost: 1, account: "B" });
    expect(s.queuedFor("A")).toBe(3);
    expect(s.queued).toBe(4);
    for (let i = 0; i < 5; i++) {
      r.release();
      await tick();
    }
    expect(await Promise.all([running, ...queued, later, other])).toEqual(["out:0", "out:1", "out:2", "out:4", "out:5"]);
    expect(s.queuedFor("A")).toBe(0);
  });

  test("rejects nonsensical options", () => {
    expect(() => make(async (b) => b.map(String), { maxBatchSize: 0 })).toThrow(RangeError);
  });
});
