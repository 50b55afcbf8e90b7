/**
 * The seeded randomized ledger checker (test/support/ledger-checker/sim.ts) against the real
 * SQLite store: thousands of random steps of requests, faults and crashes, compared with a
 * reference model after every step. It prints its seed and speed; replay a failure with
 *   LEDGER_SEED=<seed> npx bun test test/ledger-checker.test.ts
 * and run longer with LEDGER_STEPS=<n>.
 */
import { expect, test } from "bun:test";
import { runLedgerChecker } from "./support/ledger-checker/sim";
import { sqliteBackend } from "./support/ledger-checker/sqlite";

const seed = process.env.LEDGER_SEED ? Number(process.env.LEDGER_SEED) : Math.floor(Math.random() * 2 ** 31);
const steps = Number(process.env.LEDGER_STEPS ?? 5_000);

test(`randomized ledger checker, SQLite store (seed ${seed})`, async () => {
  const backend = sqliteBackend();
  try {
    const r = await runLedgerChecker(backend, { seed, steps });
    console.log(
      `ledger checker: seed ${r.seed} (replay: LEDGER_SEED=${r.seed}), ${r.steps} steps in ${r.seconds.toFixed(2)} s = ${Math.round(r.steps / r.seconds)} steps/s; ` +
        `${r.requests} requests (${r.charged} charged, ${r.notCharged} released unbilled, ${r.refusedCredits} refused 402, ${r.refusedUnavailable} refused 503), ` +
        `${r.faults} faults injected, ${r.crashes} crash-restarts`,
    );
    expect(r.requests).toBeGreaterThan(0);
    // Every path was exercised, not just refusals.
    for (const n of [r.charged, r.notCharged, r.refusedCredits, r.refusedUnavailable, r.faults, r.crashes]) expect(n).toBeGreaterThan(0);
  } finally {
    await backend.close();
  }
}, 120_000);
