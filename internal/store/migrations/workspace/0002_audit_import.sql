-- Versions brought in by `munin import` get audit rows of their own action,
-- "import", so the audit log stays one row per version and still tells a tool
-- call on this server from a version that arrived in an export file. SQLite
-- cannot change a CHECK constraint in place, so the table is rebuilt (nothing
-- references it) with its rows and ids.
CREATE TABLE audit_log_new (
    id      INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    agent   TEXT NOT NULL,
    action  TEXT NOT NULL CHECK (action IN ('remember', 'forget', 'import')),
    slug    TEXT NOT NULL,
    version INTEGER NOT NULL,
    at      INTEGER NOT NULL
);
INSERT INTO audit_log_new (id, project, agent, action, slug, version, at)
    SELECT id, project, agent, action, slug, version, at FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_new RENAME TO audit_log;
-- The write budget counts recent rows other than imports; with action in the
-- index that count still reads the index alone.
CREATE INDEX audit_log_project_at ON audit_log(project, at, action);
