-- One workspace file holds the entries of all its projects; every table has a
-- project column. Times are unix nanoseconds (UTC).

-- entries keeps the latest state of every slug so that "latest version of a
-- slug" and "live entries by slug" are one index lookup, not a MAX() scan.
CREATE TABLE entries (
    project        TEXT NOT NULL,
    slug           TEXT NOT NULL,
    latest_version INTEGER NOT NULL,
    deleted        INTEGER NOT NULL DEFAULT 0,
    title          TEXT NOT NULL,
    tags           TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (project, slug)
) WITHOUT ROWID;

-- versions is append-only; the unique key makes a duplicate version impossible
-- even if the writer logic were wrong.
CREATE TABLE versions (
    id         INTEGER PRIMARY KEY,
    project    TEXT NOT NULL,
    slug       TEXT NOT NULL,
    version    INTEGER NOT NULL CHECK (version >= 1),
    title      TEXT NOT NULL,
    content    TEXT NOT NULL,
    tags       TEXT NOT NULL DEFAULT '[]',
    agent      TEXT NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (project, slug, version),
    FOREIGN KEY (project, slug) REFERENCES entries(project, slug)
);

CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    agent   TEXT NOT NULL,
    action  TEXT NOT NULL CHECK (action IN ('remember', 'forget')),
    slug    TEXT NOT NULL,
    version INTEGER NOT NULL,
    at      INTEGER NOT NULL
);
-- The write budget counts a project's recent audit rows.
CREATE INDEX audit_log_project_at ON audit_log(project, at);

CREATE TABLE search_log (
    id          INTEGER PRIMARY KEY,
    project     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    query       TEXT NOT NULL,
    hits        INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX search_log_project_at ON search_log(project, at);

CREATE TABLE idempotency (
    project    TEXT NOT NULL,
    slug       TEXT NOT NULL,
    key        TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL, -- of the version; also the start of the 24 h window
    PRIMARY KEY (project, slug, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_created_at ON idempotency(created_at);
