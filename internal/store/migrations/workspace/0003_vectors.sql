-- vectors holds the embeddings of entries (derived data: recomputed from the
-- versions when missing; left out of exports, kept by backups). One row per
-- slug and model: the vector of the version named, vec being dim
-- little-endian float32s. A vector of an older version than the slug's
-- latest is stale and read as missing. A rowid table (not WITHOUT ROWID):
-- its rows are kilobytes, and the key lookups the worker makes read only
-- the columns before vec.
CREATE TABLE vectors (
    project TEXT NOT NULL,
    slug    TEXT NOT NULL,
    model   TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    dim     INTEGER NOT NULL CHECK (dim > 0),
    vec     BLOB NOT NULL,
    PRIMARY KEY (project, slug, model)
);
