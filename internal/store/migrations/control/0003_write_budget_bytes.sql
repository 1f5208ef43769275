-- The write budget in content bytes per hour beside the count; 0 means the
-- server default.
ALTER TABLE projects ADD COLUMN write_budget_bytes INTEGER NOT NULL DEFAULT 0 CHECK (write_budget_bytes >= 0);
