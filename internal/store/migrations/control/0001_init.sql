-- The control database: which workspaces and projects exist, and the keys
-- that grant access to them. Times are unix nanoseconds (UTC).
CREATE TABLE workspaces (
    name       TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);

CREATE TABLE projects (
    workspace    TEXT NOT NULL REFERENCES workspaces(name),
    name         TEXT NOT NULL,
    write_budget INTEGER NOT NULL DEFAULT 0 CHECK (write_budget >= 0),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace, name)
);

CREATE TABLE keys (
    id           INTEGER PRIMARY KEY,
    workspace    TEXT NOT NULL,
    project      TEXT NOT NULL,
    agent        TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    hash         TEXT NOT NULL UNIQUE, -- hex SHA-256 of the token; the token itself is never stored
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER,
    FOREIGN KEY (workspace, project) REFERENCES projects(workspace, name)
);

CREATE TABLE settings (
    k TEXT PRIMARY KEY,
    v TEXT NOT NULL
);
