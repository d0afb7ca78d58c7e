-- Rollcall schema version 1, tables prefixed rollcall_.
-- Apply once as a user allowed to create tables; the application user then needs
-- SELECT, INSERT, UPDATE and DELETE on rollcall_state, rollcall_records and rollcall_changes.

CREATE TABLE IF NOT EXISTS rollcall_state (
  id INTEGER NOT NULL PRIMARY KEY,
  schema_version INTEGER NOT NULL,
  revision BIGINT NOT NULL,
  purged_through BIGINT NOT NULL,
  created_by VARCHAR(100) NOT NULL
);

CREATE TABLE IF NOT EXISTS rollcall_records (
  cluster_name VARCHAR(63) COLLATE "C" NOT NULL,
  record_key VARCHAR(400) COLLATE "C" NOT NULL,
  record_version BIGINT NOT NULL,
  record_value TEXT NOT NULL,
  created_revision BIGINT NULL,
  PRIMARY KEY (cluster_name, record_key)
);

CREATE TABLE IF NOT EXISTS rollcall_changes (
  id BIGINT NOT NULL PRIMARY KEY,
  cluster_name VARCHAR(63) COLLATE "C" NOT NULL,
  record_key VARCHAR(400) COLLATE "C" NOT NULL,
  record_version BIGINT NOT NULL,
  record_value TEXT NULL,
  created_ms BIGINT NOT NULL,
  created_revision BIGINT NULL
);

CREATE INDEX IF NOT EXISTS rollcall_changes_created ON rollcall_changes (created_ms);

CREATE OR REPLACE FUNCTION rollcall_changes_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify(TG_TABLE_NAME, ''); RETURN NULL; END $$;

CREATE OR REPLACE TRIGGER rollcall_changes_notify AFTER INSERT ON rollcall_changes FOR EACH STATEMENT EXECUTE FUNCTION rollcall_changes_notify();

-- Tables created by an earlier release of schema version 1 lack the column created_revision;
-- to upgrade them, apply only these two statements (not the script above), once:
--   ALTER TABLE rollcall_records ADD COLUMN created_revision BIGINT NULL;
--   ALTER TABLE rollcall_changes ADD COLUMN created_revision BIGINT NULL;

INSERT INTO rollcall_state (id, schema_version, revision, purged_through, created_by) VALUES (1, 1, 0, 0, '@rollcall/postgres 0.1.0');
