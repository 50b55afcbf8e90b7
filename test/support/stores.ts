/**
 * The stores a parameterised suite runs against. `npm test` runs both: every money and limit test
 * file wraps its tests in describeEachStore(), once over SQLite and once over PostgreSQL (a fresh
 * database of the shared test server, test/support/postgres.ts). SWITCHYARD_TEST_STORES=sqlite
 * (or =postgres) narrows a local run to one.
 */
import { describe } from "bun:test";

export type TestStore = "sqlite" | "postgres";

export const ALL_STORES: readonly TestStore[] = ["sqlite", "postgres"];

export function testStores(): TestStore[] {
  const named = process.env.SWITCHYARD_TEST_STORES?.split(",").map((s) => s.trim()).filter(Boolean);
  if (!named || named.length === 0) return [...ALL_STORES];
  for (const n of named) if (!ALL_STORES.includes(n as TestStore)) throw new Error(`SWITCHYARD_TEST_STORES: '${n}' is not one of ${ALL_STORES.join(", ")}`);
  return named as TestStore[];
}

/** `describe(name [store], ...)` once per store; hooks declared inside belong to that store's run. */
export function describeEachStore(name: string, body: (store: TestStore) => void): void {
  for (const store of testStores()) describe(`${name} [${store}]`, () => body(store));
}
