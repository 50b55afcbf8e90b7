/**
 * Recorded client request bodies (test/fixtures/clients/<client>.json). The end-to-end client
 * tests capture what the real clients send; with SWITCHYARD_RECORD_FIXTURES=1 (or when the file
 * is missing) they write it, and the table-driven translator tests replay it. Values that
 * identify a machine or a run (device and session ids, temp paths) are replaced by stable ones.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const FIXTURE_DIR = join(import.meta.dir, "../fixtures/clients");

const SCRUB: [RegExp, string][] = [
  [/\/tmp\/switchyard-agent-[A-Za-z0-9]+/g, "/tmp/switchyard-agent-XXXXXX"],
  [/[0-9a-f]{64}/g, "0".repeat(64)],
  [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "00000000-0000-0000-0000-000000000000"],
  [/sy-[A-Za-z0-9_-]{16,}/g, "sy-REDACTED"],
];

export function scrub<T>(value: T): T {
  let text = JSON.stringify(value);
  for (const [re, to] of SCRUB) text = text.replace(re, to);
  return JSON.parse(text) as T;
}

export function saveClientFixture(client: string, bodies: unknown[], extra: Record<string, unknown> = {}): void {
  const file = join(FIXTURE_DIR, `${client}.json`);
  if (existsSync(file) && process.env.SWITCHYARD_RECORD_FIXTURES !== "1") return;
  mkdirSync(FIXTURE_DIR, { recursive: true });
  writeFileSync(file, JSON.stringify(scrub({ client, recorded_at: new Date().toISOString().slice(0, 10), ...extra, requests: bodies }), null, 1) + "\n");
}
