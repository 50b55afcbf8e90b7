import type { PgMigration } from "./index";

/**
 * The same tables as the SQLite store (src/store/migrations: accounts, API keys, holds, the
 * ledger, stored responses and their items, request outcomes), with PostgreSQL types: money is
 * BIGINT nano-USD, times are unix seconds as in SQLite, so rows read the same from either store. The store's invariants are
 * constraints here too: balance ≥ reserved ≥ 0, one charge per request id, and ledger entries
 * that can only ever be inserted.
 */
export const core: PgMigration = {
  version: 1,
  name: "core",
  sql: `
CREATE TABLE accounts (
  id                TEXT PRIMARY KEY,
  name              TEXT NOT NULL,
  balance           BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0),
  reserved          BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  disabled          SMALLINT NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
  rate_limit_rpm    INTEGER,
  concurrency_limit INTEGER,
  created_at        BIGINT NOT NULL,
  -- Holds are only ever taken from the available balance, and a deduction may not dig into
  -- what is held: what is reserved is always covered.
  CONSTRAINT accounts_reserved_covered CHECK (reserved <= balance)
);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  name        TEXT,
  prefix      TEXT NOT NULL,
  hash        TEXT NOT NULL UNIQUE,
  created_at  BIGINT NOT NULL,
  revoked_at  BIGINT,
  -- Creation order within a second (SQLite lists by rowid there).
  seq         BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX api_keys_account ON api_keys(account_id);

-- Two-phase transfers: a hold is pending until exactly one post (charge) or void (release).
CREATE TABLE holds (
  request_id  TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  amount      BIGINT NOT NULL CHECK (amount >= 0),
  endpoint    TEXT NOT NULL,
  model       TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'posted', 'voided')),
  created_at  BIGINT NOT NULL,
  closed_at   BIGINT
);

-- Immutable: rows are only ever inserted (triggers below). A charge is unique per request id.
CREATE TABLE ledger_entries (
  id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  kind             TEXT NOT NULL CHECK (kind IN ('charge', 'credit', 'debit')),
  amount           BIGINT NOT NULL,
  balance_after    BIGINT NOT NULL CHECK (balance_after >= 0),
  request_id       TEXT,
  endpoint         TEXT,
  model            TEXT,
  service_tier     TEXT,
  input_tokens     BIGINT NOT NULL DEFAULT 0,
  output_tokens    BIGINT NOT NULL DEFAULT 0,
  cached_tokens    BIGINT NOT NULL DEFAULT 0,
  reasoning_tokens BIGINT NOT NULL DEFAULT 0,
  characters       BIGINT NOT NULL DEFAULT 0,
  reason           TEXT,
  created_at       BIGINT NOT NULL
);
CREATE UNIQUE INDEX ledger_charge_once ON ledger_entries(request_id) WHERE kind = 'charge';
CREATE INDEX ledger_account_time ON ledger_entries(account_id, created_at);
CREATE INDEX ledger_account_newest ON ledger_entries(account_id, id DESC);

CREATE FUNCTION switchyard_ledger_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger entries are immutable' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER ledger_entries_immutable BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION switchyard_ledger_immutable();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION switchyard_ledger_immutable();

-- Stored Responses turns; input_items and response are JSON text exactly as the SQLite store keeps them.
CREATE TABLE responses (
  id                    TEXT PRIMARY KEY,
  account_id            TEXT NOT NULL REFERENCES accounts(id),
  previous_response_id  TEXT,
  input_items           TEXT NOT NULL,
  response              TEXT NOT NULL,
  created_at            BIGINT NOT NULL
);
CREATE INDEX responses_account ON responses(account_id, created_at);

-- Items of stored responses by id, for item_reference inputs (one indexed read).
CREATE TABLE response_items (
  account_id   TEXT NOT NULL,
  item_id      TEXT NOT NULL,
  response_id  TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
  item         TEXT NOT NULL,
  PRIMARY KEY (account_id, item_id)
);
CREATE INDEX response_items_response ON response_items(response_id);

-- How each admitted request ended (generation records); written in batches, no money here.
CREATE TABLE request_outcomes (
  request_id   TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL,
  endpoint     TEXT NOT NULL,
  model        TEXT NOT NULL,
  http_status  INTEGER NOT NULL,
  outcome      TEXT NOT NULL,
  streamed     SMALLINT NOT NULL,
  duration_ms  BIGINT NOT NULL,
  engine_ms    BIGINT NOT NULL
);
`,
};
