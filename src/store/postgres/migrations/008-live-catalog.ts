import type { PgMigration } from "./index";

/**
 * Models, upstreams and routes written through the admin API or `switchyard catalog|routes`, the
 * counterpart of SQLite's migration 007 (docs/operate.md, "Managing models, prices and routes live").
 * Every write moves `live_config_version` and notifies channel `switchyard_changes` with table
 * `live_config`, so every instance reloads them at once (store/postgres/changes.ts).
 */
export const liveCatalog: PgMigration = {
  version: 8,
  name: "live-catalog",
  sql: `
CREATE TABLE live_config (
  kind        TEXT NOT NULL CHECK (kind IN ('model', 'upstream', 'route')),
  id          TEXT NOT NULL,
  body        TEXT NOT NULL,
  updated_at  BIGINT NOT NULL,
  PRIMARY KEY (kind, id)
);
CREATE TABLE live_config_version (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  version  BIGINT NOT NULL
);
INSERT INTO live_config_version (id, version) VALUES (1, 0);

CREATE FUNCTION switchyard_live_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE live_config_version SET version = version + 1 WHERE id = 1;
  PERFORM pg_notify('switchyard_changes', json_build_object('table', 'live_config', 'id', COALESCE(NEW.kind, OLD.kind))::text);
  RETURN NULL;
END $$;
CREATE TRIGGER live_config_changed AFTER INSERT OR UPDATE OR DELETE ON live_config
  FOR EACH ROW EXECUTE FUNCTION switchyard_live_config_changed();
`,
};
