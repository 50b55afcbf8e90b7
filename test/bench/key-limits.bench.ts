/**
 * What a key's spend limit costs the hold path (docs/operate.md, "Keys: limits, expiry, models"): holds
 * and charges per second through the real Ledger over the SQLite store, requests made without a
 * key against requests made with a limited key (the key's row updated in the hold's own write,
 * its spend counted by the charge's triggers). Same account size, same batch pressure; the two
 * modes alternate, three rounds each, and the medians are printed.
 * Run alone: ./node_modules/.bin/bun test/bench/key-limits.bench.ts
 *
 *   BENCH_REQUESTS (4000)  BENCH_INFLIGHT (64)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/database";
import { SqliteLedgerStore } from "../../src/store/sqlite/ledger-store";
import { SqliteKeyRecords } from "../../src/store/sqlite/accounts";
import { ApiKeys, NO_CONTROLS } from "../../src/accounts/api-keys";
import { Ledger } from "../../src/billing/ledger";
import { Log } from "../../src/log";
import { median } from "./lib/load";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const price = (u: { inputTokens?: number; outputTokens?: number }) => 100 * ((u.inputTokens ?? 0) + (u.outputTokens ?? 0));

/** Requests per second and CPU (all threads: the WAL fsync runs on the thread pool) per request in µs. */
async function run(withKey: boolean): Promise<{ rate: number; cpuUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-keylimit-bench-"));
  const db = openStore(dir);
  try {
    const store = new SqliteLedgerStore(db);
    const ledger = new Ledger(store, new Log("silent"));
    await ledger.openAccount({ id: "acct_bench", name: "bench", createdAt: 0 }, 1_000_000_000_000, "bench credits");
    const key = await new ApiKeys(new SqliteKeyRecords(db)).create("acct_bench", "bench", { ...NO_CONTROLS, spend_limit: 1_000_000_000_000, limit_reset: "daily" });
    let next = 0;
    const worker = async () => {
      while (next < REQUESTS) {
        const i = next++;
        const hold = await ledger.reserve({
          requestId: `r${i}`, accountId: "acct_bench", endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: 10, outputTokens: 5 }, price,
          ...(withKey ? { key: { id: key.id, limitReset: "daily" as const } } : {}),
        });
        await hold.settle({ serviceTier: "default", inputTokens: 7, outputTokens: 0 });
      }
    };
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all(Array.from({ length: INFLIGHT }, worker));
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    const charged = (db.query("SELECT COUNT(*) AS n FROM ledger_entries WHERE kind = 'charge'").get() as { n: number }).n;
    if (charged !== REQUESTS) throw new Error(`expected ${REQUESTS} charges, found ${charged}`);
    if (withKey) {
      const k = db.query("SELECT period_spent, reserved FROM api_keys WHERE id = ?").get(key.id) as { period_spent: number; reserved: number };
      if (k.period_spent !== REQUESTS * 700 || k.reserved !== 0) throw new Error(`key figures off: ${JSON.stringify(k)}`);
    }
    store.close();
    return { rate: REQUESTS / seconds, cpuUs: (cpu.user + cpu.system) / REQUESTS };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const without: { rate: number; cpuUs: number }[] = [];
const withKey: { rate: number; cpuUs: number }[] = [];
for (let round = 0; round < 5; round++) {
  without.push(await run(false));
  withKey.push(await run(true));
}
const line = (name: string, xs: { rate: number; cpuUs: number }[]) =>
  `  ${name}: ${Math.round(median(xs.map((x) => x.rate)))} requests/s, ${median(xs.map((x) => x.cpuUs)).toFixed(1)} µs CPU per request ` +
  `(medians of ${xs.length}; CPU per round: ${xs.map((x) => x.cpuUs.toFixed(0)).join(", ")})`;
console.log(`key limits: ${REQUESTS} requests (reserve + settle), ${INFLIGHT} in flight, SQLite store`);
console.log(line("without a key     ", without));
console.log(line("with a limited key", withKey));
