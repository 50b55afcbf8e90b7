import type { Migration } from "./index";

/**
 * Models, upstreams and routes written through the admin API or `switchyard catalog|routes`
 * (docs/operate.md, "Managing models, prices and routes live"): one row per entry, its JSON document in
 * `body`, layered over SWITCHYARD_CATALOG / SWITCHYARD_ROUTES and the embedded catalog. `version`
 * moves on every write, so a server polls one integer to notice a change the CLI made.
 */
export const liveCatalog: Migration = {
  version: 9,
  name: "live-catalog",
  sql: `
CREATE TABLE live_config (
  kind        TEXT NOT NULL CHECK (kind IN ('model', 'upstream', 'route')),
  id          TEXT NOT NULL,
  body        TEXT NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (kind, id)
);
CREATE TABLE live_config_version (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  version  INTEGER NOT NULL
);
INSERT INTO live_config_version (id, version) VALUES (1, 0);
`,
};
