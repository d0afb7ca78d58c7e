-- Rollcall schema version 1, tables prefixed rollcall_.
-- Apply once as a user allowed to create tables; the application user then needs
-- SELECT, INSERT, UPDATE and DELETE on rollcall_state, rollcall_records and rollcall_changes.

CREATE TABLE IF NOT EXISTS rollcall_state (
  id INT NOT NULL PRIMARY KEY,
  schema_version INT NOT NULL,
  revision BIGINT NOT NULL,
  purged_through BIGINT NOT NULL,
  created_by VARCHAR(100) NOT NULL
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS rollcall_records (
  cluster_name VARCHAR(63) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record_key VARCHAR(400) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record_version BIGINT NOT NULL,
  record_value MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  created_revision BIGINT NULL,
  PRIMARY KEY (cluster_name, record_key)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS rollcall_changes (
  id BIGINT NOT NULL PRIMARY KEY,
  cluster_name VARCHAR(63) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record_key VARCHAR(400) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record_version BIGINT NOT NULL,
  record_value MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  created_ms BIGINT NOT NULL,
  created_revision BIGINT NULL,
  KEY rollcall_changes_created (created_ms)
) ENGINE=InnoDB;

-- Tables created by an earlier release of schema version 1 lack the column created_revision;
-- to upgrade them, apply only these two statements (not the script above), once:
--   ALTER TABLE rollcall_records ADD COLUMN created_revision BIGINT NULL;
--   ALTER TABLE rollcall_changes ADD COLUMN created_revision BIGINT NULL;

INSERT INTO rollcall_state (id, schema_version, revision, purged_through, created_by) VALUES (1, 1, 0, 0, '@rollcall/mysql 0.1.0');
