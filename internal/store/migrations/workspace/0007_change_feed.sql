-- The change feed (docs/changes.md) reads the audit log after a cursor's
-- position: an audit id and the time of that row. Ids are given out again
-- when the file is replaced by an older copy, and start at 1 in a file
-- created anew, so the file carries an identity of its own, drawn once when
-- this step runs: a cursor made from another file is refused as expired
-- instead of skipping or repeating changes. The identity moves with the file
-- (a backup, a cluster's replica), as the ids do. (IF NOT EXISTS, OR IGNORE:
-- a step that runs again on a file that has it changes nothing.)
CREATE TABLE IF NOT EXISTS workspace_identity (
    one   INTEGER PRIMARY KEY CHECK (one = 1),
    token TEXT NOT NULL
);
INSERT OR IGNORE INTO workspace_identity (one, token) VALUES (1, lower(hex(randomblob(8))));

-- A feed read asks each of the caller's projects for its rows after an id:
-- an index range scan per project, however many rows other projects of the
-- workspace wrote.
CREATE INDEX IF NOT EXISTS audit_log_project_id ON audit_log(project, id);
