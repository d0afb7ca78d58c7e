-- Rollcall schema version 1, tables prefixed rollcall_.
-- Apply once as a user allowed to create tables; the application user then needs
-- SELECT, INSERT, UPDATE and DELETE on rollcall_state, rollcall_records and rollcall_changes.

CREATE TABLE IF NOT EXISTS rollcall_state (
  id INTEGER NOT NULL PRIMARY KEY,
  schema_version INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  purged_through INTEGER NOT NULL,
  created_by TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS rollcall_records (
  cluster_name TEXT NOT NULL,
  record_key TEXT NOT NULL,
  record_version INTEGER NOT NULL,
  record_value TEXT NOT NULL,
  created_revision INTEGER,
  PRIMARY KEY (cluster_name, record_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS rollcall_changes (
  id INTEGER NOT NULL PRIMARY KEY,
  cluster_name TEXT NOT NULL,
  record_key TEXT NOT NULL,
  record_version INTEGER NOT NULL,
  record_value TEXT,
  created_ms INTEGER NOT NULL,
  created_revision INTEGER
);

CREATE INDEX IF NOT EXISTS rollcall_changes_created ON rollcall_changes (created_ms);

-- Tables created by an earlier release of schema version 1 lack the column created_revision;
-- to upgrade them, apply only these two statements (not the script above), once:
--   ALTER TABLE rollcall_records ADD COLUMN created_revision BIGINT NULL;
--   ALTER TABLE rollcall_changes ADD COLUMN created_revision BIGINT NULL;

INSERT INTO rollcall_state (id, schema_version, revision, purged_through, created_by) VALUES (1, 1, 0, 0, '@rollcall/sqlite 0.1.0');
