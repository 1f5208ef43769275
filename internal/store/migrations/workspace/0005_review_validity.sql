-- Stage 11 (trusted memory): proposals, facts that expire or are
-- superseded, and the audit actions that go with them.

-- A version may carry the time after which it no longer holds
-- (valid_until, unix nanoseconds; NULL: always) and the slugs it replaces
-- (supersedes, a JSON array). entries copies valid_until of its latest
-- version and names the slug whose write superseded it (superseded_by,
-- NULL: live), so the hit path reads both with the latest version.
ALTER TABLE versions ADD COLUMN valid_until INTEGER;
ALTER TABLE versions ADD COLUMN supersedes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE entries ADD COLUMN valid_until INTEGER;
ALTER TABLE entries ADD COLUMN superseded_by TEXT;

-- supersessions records when a write superseded a slug, so that "as of"
-- reads know whether an entry was superseded at a time.
CREATE TABLE supersessions (
    project    TEXT NOT NULL,
    slug       TEXT NOT NULL, -- the entry superseded
    by_slug    TEXT NOT NULL, -- the entry whose write superseded it
    by_version INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (project, slug, at, by_slug)
) WITHOUT ROWID;

-- Whether a project's write keys propose instead of writing: 'off' (the
-- default, also when the project has no row) or 'agents'. It lives in the
-- workspace file, beside the proposals, so that the writer decides in the
-- write's own transaction and the setting follows the workspace's owner.
CREATE TABLE project_settings (
    project TEXT PRIMARY KEY,
    review  TEXT NOT NULL DEFAULT 'off' CHECK (review IN ('off', 'agents'))
) WITHOUT ROWID;

-- proposals are writes waiting for review. A row is never deleted: a
-- decision sets state, who decided, when, why (reason) and, for an
-- approval, the version it became.
CREATE TABLE proposals (
    id           INTEGER PRIMARY KEY,
    project      TEXT NOT NULL,
    slug         TEXT NOT NULL,
    agent        TEXT NOT NULL,            -- the proposer
    base_version INTEGER NOT NULL CHECK (base_version >= 0),
    title        TEXT NOT NULL,
    content      TEXT NOT NULL,
    tags         TEXT NOT NULL DEFAULT '[]',
    deleted      INTEGER NOT NULL DEFAULT 0, -- a proposed forget
    valid_until  INTEGER,
    supersedes   TEXT NOT NULL DEFAULT '[]',
    similar      TEXT NOT NULL DEFAULT '[]', -- duplicate hints at proposal time
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'rejected')),
    created_at   INTEGER NOT NULL,
    decided_by   TEXT,
    decided_at   INTEGER,
    reason       TEXT NOT NULL DEFAULT '',
    version      INTEGER                    -- the version an approval wrote
);
CREATE INDEX proposals_project_state ON proposals(project, state, id);
CREATE INDEX proposals_project_agent ON proposals(project, agent, state, id);

-- The audit log gains the review actions: propose (the proposer; version 0
-- until decided), approve and reject (the reviewer), and the proposal each
-- concerns. The CHECK constraint is rebuilt as in 0002.
CREATE TABLE audit_log_new (
    id       INTEGER PRIMARY KEY,
    project  TEXT NOT NULL,
    agent    TEXT NOT NULL,
    action   TEXT NOT NULL CHECK (action IN ('remember', 'forget', 'import', 'propose', 'approve', 'reject')),
    slug     TEXT NOT NULL,
    version  INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    proposal INTEGER
);
INSERT INTO audit_log_new (id, project, agent, action, slug, version, at)
    SELECT id, project, agent, action, slug, version, at FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_new RENAME TO audit_log;
CREATE INDEX audit_log_project_at ON audit_log(project, at, action);
