-- Whether remember's answer carries the duplicate hint for a new slug in
-- this project: 'on' (the default, also when the project has no row) or
-- 'off'. Beside review, so that the writer's cache of a project's settings
-- (store/settings.go) reads both in one row.
ALTER TABLE project_settings ADD COLUMN similar TEXT NOT NULL DEFAULT 'on' CHECK (similar IN ('on', 'off'));
