-- The search index on disk records the last version id (the workspace's
-- change sequence) it reflects and, when opened, reads only the slugs written
-- after it: this index makes that an index range scan per project, without
-- reading the versions' text.
CREATE INDEX IF NOT EXISTS versions_project_id ON versions(project, id, slug);
