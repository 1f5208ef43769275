-- A write made with an OAuth access token (issue 25) acts exactly as the
-- token's keys, so the agent of its audit row is the key's agent; client
-- names the app the token was issued to (the grant's client name, e.g.
-- "Claude") beside it. NULL: the write was made with a key or in the web UI
-- (and every row written before this step). Only the audit log carries it:
-- it is the audit trail (the feed and the audit page read it); versions and
-- proposals keep their agent, whose audit row tells the client.
ALTER TABLE audit_log ADD COLUMN client TEXT;
