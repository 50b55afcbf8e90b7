/**
 * The seeded randomized ledger checker (test/support/ledger-checker/sim.ts) against the real
 * stores: thousands of random steps of requests, faults and crashes on SQLite, fewer on
 * PostgreSQL (every step is a few round trips), compared with a reference model after every
 * step. It prints its seed and speed; replay a failure with
 *   LEDGER_SEED=<seed> npx bun test test/ledger-checker.test.ts
 * and run longer with LEDGER_STEPS=<n> (SQLite) or LEDGER_PG_STEPS=<n> (PostgreSQL).
 */
import { expect, test } from "bun:test";
import { runLedgerChecker, type CheckerReport } from "./support/ledger-checker/sim";
import { sqliteBackend } from "./support/ledger-checker/sqlite";
import { postgresBackend } from "./support/ledger-checker/postgres";
import type { LedgerBackend } from "./support/ledger-checker/backend";
import { testStores } from "./support/stores";

const seed = process.env.LEDGER_SEED ? Number(process.env.LEDGER_SEED) : Math.floor(Math.random() * 2 ** 31);
const steps = { sqlite: Number(process.env.LEDGER_STEPS ?? 5_000), postgres: Number(process.env.LEDGER_PG_STEPS ?? 2_000) };
const backends = { sqlite: async () => sqliteBackend(), postgres: postgresBackend };

function report(name: string, r: CheckerReport): void {
  console.log(
    `ledger checker (${name}): seed ${r.seed} (replay: LEDGER_SEED=${r.seed}), ${r.steps} steps in ${r.seconds.toFixed(2)} s = ${Math.round(r.steps / r.seconds)} steps/s; ` +
      `${r.requests} requests (${r.charged} charged, ${r.notCharged} released unbilled, ${r.refusedCredits} refused 402, ${r.refusedKeyLimit} refused 402 by a key limit, ${r.refusedUnavailable} refused 503), ` +
      `${r.faults} faults injected, ${r.crashes} crash-restarts, ${r.clockMoves} clock moves, ${r.deadlines} streams ended at their deadline, ` +
      `${r.expired} holds expired by the sweep (${r.expiredRefused} requests past the expiry refused their charge), ${r.cacheCharges} charges with cache reads or writes, ${r.resetChanges} limit_reset changes, ${r.databaseRestarts} database restarts`,
  );
}

for (const store of testStores()) {
  test(`randomized ledger checker, ${store === "sqlite" ? "SQLite" : "PostgreSQL"} store (seed ${seed})`, async () => {
    const backend: LedgerBackend = await backends[store]();
    try {
      const r = await runLedgerChecker(backend, { seed, steps: steps[store] });
      report(store, r);
      expect(r.requests).toBeGreaterThan(0);
      // Every path was exercised, not just refusals.
      for (const n of [r.charged, r.notCharged, r.refusedCredits, r.refusedKeyLimit, r.refusedUnavailable, r.faults, r.crashes, r.clockMoves, r.deadlines, r.expired, r.cacheCharges, r.resetChanges]) expect(n).toBeGreaterThan(0);
      if (store === "postgres") expect(r.databaseRestarts).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  }, 120_000);
}
