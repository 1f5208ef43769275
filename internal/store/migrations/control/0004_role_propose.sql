-- The role propose (between read and write): its remember and forget become
-- proposals waiting for review. The CHECK constraint is rebuilt as in 0002.
CREATE TABLE keys_new (
    id           INTEGER PRIMARY KEY,
    workspace    TEXT,
    project      TEXT,
    agent        TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('read', 'propose', 'write', 'admin', 'server-admin')),
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

CREATE INDEX keys_project ON keys (workspace, project);
