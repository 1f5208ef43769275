-- OAuth 2.1 sign-in (issue 25, docs/security.md): clients, the grants a
-- person consents to with their keys, and the codes and tokens issued under
-- a grant. Codes and tokens are stored as the hex SHA-256 of their text
-- only, like keys. Times are unix nanoseconds (UTC).
--
-- keys is referenced from here on (oauth_grant_keys): a later migration
-- that rebuilds keys as 0002 and 0004 did must rebuild oauth_grant_keys
-- with it, or the DROP TABLE of keys fails on the foreign key.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY, -- random (dcr), the document's https URL (cimd), the configured name (static)
    kind          TEXT NOT NULL CHECK (kind IN ('dcr', 'cimd', 'static')),
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,    -- JSON array of strings
    secret_hash   TEXT,             -- a static confidential client's secret, hashed; NULL for public clients
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER           -- its last grant
);

-- One consent = one grant = one refresh family. client_name is copied from
-- the client at consent, so a token's caller names its client without a
-- join (and keeps the name the person saw). Ids are random, like key ids.
CREATE TABLE oauth_grants (
    id          INTEGER PRIMARY KEY,
    client_id   TEXT NOT NULL REFERENCES oauth_clients(id),
    client_name TEXT NOT NULL,
    resource    TEXT NOT NULL,
    scope       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

-- The keys a grant acts as: key ids only, never a key. The index on key_id
-- finds the grants to revoke with a key.
CREATE TABLE oauth_grant_keys (
    grant_id INTEGER NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    key_id   INTEGER NOT NULL REFERENCES keys(id),
    position INTEGER NOT NULL, -- the order signed in with: the first key's project is where calls without a project act
    PRIMARY KEY (grant_id, key_id)
) WITHOUT ROWID;
CREATE INDEX oauth_grant_keys_key ON oauth_grant_keys (key_id);

CREATE TABLE oauth_codes (
    hash         TEXT PRIMARY KEY,
    grant_id     INTEGER NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    challenge    TEXT NOT NULL,     -- PKCE S256: base64url(SHA-256(verifier))
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER            -- set by the one exchange; a second one is reuse
);
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

CREATE TABLE oauth_tokens (
    hash       TEXT PRIMARY KEY,
    grant_id   INTEGER NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    expires_at INTEGER NOT NULL,
    used_at    INTEGER              -- refresh: set by its rotation; a second one is reuse
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- Pruning finds grants long expired or revoked.
CREATE INDEX oauth_grants_expires ON oauth_grants (expires_at);
CREATE INDEX oauth_grants_revoked ON oauth_grants (revoked_at) WHERE revoked_at IS NOT NULL;
