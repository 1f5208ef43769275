-- Server-admin keys administer the whole server and belong to no project:
-- their workspace and project are NULL, and only theirs (a NULL in the
-- foreign key satisfies it). SQLite cannot change a column's constraints in
-- place, so the table is rebuilt; nothing references keys.
CREATE TABLE keys_new (
    id           INTEGER PRIMARY KEY,
    workspace    TEXT,
    project      TEXT,
    agent        TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin', 'server-admin')),
    hash         TEXT NOT NULL UNIQUE, -- hex SHA-256 of the token; the token itself is never stored
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER,
    CHECK ((workspace IS NULL) = (project IS NULL)),
    CHECK ((role = 'server-admin') = (workspace IS NULL)),
    FOREIGN KEY (workspace, project) REFERENCES projects(workspace, name)
);

INSERT INTO keys_new (id, workspace, project, agent, role, hash, created_at, last_used_at, revoked_at)
    SELECT id, workspace, project, agent, role, hash, created_at, last_used_at, revoked_at FROM keys;

DROP TABLE keys;

ALTER TABLE keys_new RENAME TO keys;

-- The keys page of a project admin lists its project's keys.
CREATE INDEX keys_project ON keys (workspace, project);
