import type { Migration } from "./index";

/**
 * Accounts, API keys, holds and the ledger. Money columns are integers of nano-USD
 * (1 USD = 1e9 units); CHECK constraints make a negative balance impossible at the storage layer.
 */
export const core: Migration = {
  version: 1,
  name: "core",
  sql: `
CREATE TABLE accounts (
  id                TEXT PRIMARY KEY,
  name              TEXT NOT NULL,
  balance           INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
  reserved          INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  disabled          INTEGER NOT NULL DEFAULT 0,
  rate_limit_rpm    INTEGER,
  concurrency_limit INTEGER,
  created_at        INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  name        TEXT,
  prefix      TEXT NOT NULL,
  hash        TEXT NOT NULL UNIQUE,
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);
CREATE INDEX api_keys_account ON api_keys(account_id);

-- Two-phase transfers: a hold is pending until exactly one post (charge) or void (release).
CREATE TABLE holds (
  request_id  TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  amount      INTEGER NOT NULL CHECK (amount >= 0),
  endpoint    TEXT NOT NULL,
  model       TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'posted', 'voided')),
  created_at  INTEGER NOT NULL,
  closed_at   INTEGER
);
CREATE INDEX holds_pending ON holds(state) WHERE state = 'pending';

-- Immutable: rows are only ever inserted. A charge is unique per request id.
CREATE TABLE ledger_entries (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  kind          TEXT NOT NULL CHECK (kind IN ('charge', 'credit', 'debit')),
  amount        INTEGER NOT NULL,
  balance_after INTEGER NOT NULL,
  request_id    TEXT,
  endpoint      TEXT,
  model         TEXT,
  service_tier  TEXT,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  characters    INTEGER NOT NULL DEFAULT 0,
  reason        TEXT,
  created_at    INTEGER NOT NULL
);
CREATE UNIQUE INDEX ledger_charge_once ON ledger_entries(request_id) WHERE kind = 'charge';
CREATE INDEX ledger_account_time ON ledger_entries(account_id, created_at);
CREATE TRIGGER ledger_entries_immutable_update BEFORE UPDATE ON ledger_entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are immutable'); END;
CREATE TRIGGER ledger_entries_immutable_delete BEFORE DELETE ON ledger_entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are immutable'); END;
`,
};
