-- vectors holds the embeddings of entry versions (derived data: recomputed
-- from the versions when missing; left out of exports, kept by backups).
-- vec is little-endian float32, dim of them. The store keeps at most one
-- vector per slug: storing a new one drops the slug's older versions' and
-- other models' vectors.
CREATE TABLE vectors (
    project TEXT NOT NULL,
    slug    TEXT NOT NULL,
    version INTEGER NOT NULL,
    model   TEXT NOT NULL,
    dim     INTEGER NOT NULL CHECK (dim > 0),
    vec     BLOB NOT NULL,
    PRIMARY KEY (project, slug, version, model)
) WITHOUT ROWID;
