import type { Migration } from "./index";

/**
 * Cached input billed at the cached price (docs/money.md, "Cached input"): a charge records the
 * prompt tokens the upstream read from its prompt cache (`cached_tokens`) and wrote to it
 * (`cache_write_tokens`), and what the cache took off the charge (`cache_saved`, nano-USD,
 * negative when writes cost more than the reads saved). Older entries read 0.
 */
export const cacheTokens: Migration = {
  version: 10,
  name: "cache_tokens",
  sql: `
ALTER TABLE ledger_entries ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ledger_entries ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ledger_entries ADD COLUMN cache_saved INTEGER NOT NULL DEFAULT 0;
`,
};
