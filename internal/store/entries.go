package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"munin/internal/memory"
)

// Audit actions.
const (
	actionRemember = "remember"
	actionForget   = "forget"
	// The review actions: propose (the proposer), approve and reject (the
	// reviewer).
	actionPropose = "propose"
	actionApprove = "approve"
	actionReject  = "reject"
)

// Append writes the next version of w.Slug, its audit row and (with an
// idempotency key) the key's record in one transaction, group-committed with
// the other writes waiting for the workspace. Forget is w.Deleted: a
// tombstone version with empty content.
func (s *Store) Append(ctx context.Context, ref memory.ProjectRef, w memory.Write) (memory.WriteResult, error) {
	if err := memory.ValidateSlug(w.Slug); err != nil {
		return memory.WriteResult{}, err
	}
	if w.ExpectedVersion != nil && *w.ExpectedVersion < 0 {
		return memory.WriteResult{}, memory.Errorf(memory.CodeInvalid, "expected version %d must not be negative", *w.ExpectedVersion)
	}
	if w.Deleted {
		w.Content = "" // a tombstone carries no content, whatever the caller sent
	}
	tags, err := encodeTags(w.Tags)
	if err != nil {
		return memory.WriteResult{}, fmt.Errorf("append %s: %w", w.Slug, err)
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.WriteResult{}, err
	}
	val, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		return ws.write(tx, ref.Project, w, tags)
	})
	if err != nil {
		return memory.WriteResult{}, fmt.Errorf("append %s: %w", w.Slug, err)
	}
	return val.(memory.WriteResult), nil
}

// applyWrite is one Append inside the batch transaction. The single writer
// makes "read latest, insert latest+1" race-free; UNIQUE(project, slug,
// version) would catch it if that ever stopped being true. ps are the
// project's settings (workspace.write reads them from the writer's cache).
func applyWrite(tx *sql.Tx, project string, w memory.Write, tags string, ps projectSettings) (memory.WriteResult, error) {
	now := time.Now().UTC()
	if w.IdempotencyKey != "" {
		res, found, err := findReplay(context.Background(), tx, project, w.Slug, w.IdempotencyKey, now)
		if err != nil || found {
			return res, err
		}
	}

	if w.Review != memory.WriteDirect {
		res, proposed, err := applyProposal(tx, project, w, tags, now, ps.Review)
		if proposed || err != nil {
			return res, err
		}
	}

	var cur int
	var deleted bool
	err := tx.QueryRow(`SELECT latest_version, deleted FROM entries WHERE project = ? AND slug = ?`,
		project, w.Slug).Scan(&cur, &deleted)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return memory.WriteResult{}, fmt.Errorf("read latest version: %w", err)
	}
	if w.ExpectedVersion != nil && *w.ExpectedVersion != cur {
		return memory.WriteResult{}, memory.Errorf(memory.CodeConflict, "%s is at version %d, expected %d", w.Slug, cur, *w.ExpectedVersion)
	}
	action := actionRemember
	if w.Deleted {
		action = actionForget
		if cur == 0 {
			return memory.WriteResult{}, memory.Errorf(memory.CodeNotFound, "entry %q not found", w.Slug)
		}
		if deleted {
			return memory.WriteResult{}, memory.Errorf(memory.CodeNotFound, "entry %q is already forgotten (version %d)", w.Slug, cur)
		}
	}

	validity, err := checkValidity(tx, project, w)
	if err != nil {
		return memory.WriteResult{}, err
	}

	// The upsert sets superseded_by to NULL: writing a new version of a
	// superseded entry makes it live again. That is the decision: whoever
	// writes the slug again means it to hold now, and the supersession stays
	// on record (supersessions) for "as of" reads. valid_until is the new
	// version's own; a version without one clears the old one.
	next, at := cur+1, now.UnixNano()
	if _, err := tx.Exec(`INSERT INTO entries (project, slug, latest_version, deleted, title, tags, updated_at, valid_until, superseded_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
		ON CONFLICT (project, slug) DO UPDATE SET latest_version = excluded.latest_version,
			deleted = excluded.deleted, title = excluded.title, tags = excluded.tags, updated_at = excluded.updated_at,
			valid_until = excluded.valid_until, superseded_by = NULL`,
		project, w.Slug, next, w.Deleted, w.Title, tags, at, validity.until); err != nil {
		return memory.WriteResult{}, fmt.Errorf("upsert entry: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO versions (project, slug, version, title, content, tags, agent, deleted, created_at, valid_until, supersedes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		project, w.Slug, next, w.Title, w.Content, tags, w.Agent, w.Deleted, at, validity.until, validity.supersedes); err != nil {
		return memory.WriteResult{}, fmt.Errorf("insert version: %w", err)
	}
	if err := supersede(tx, project, w, next, at); err != nil {
		return memory.WriteResult{}, err
	}
	auditAgent, proposal := w.Agent, sql.NullInt64{}
	if w.ApprovedBy != "" {
		action, auditAgent, proposal = actionApprove, w.ApprovedBy, sql.NullInt64{Int64: w.Proposal, Valid: true}
	}
	if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at, proposal, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		project, auditAgent, action, w.Slug, next, at, proposal, nullString(w.Client)); err != nil {
		return memory.WriteResult{}, fmt.Errorf("insert audit row: %w", err)
	}
	if w.IdempotencyKey != "" {
		// REPLACE overwrites an expired record of the same key.
		if _, err := tx.Exec(`INSERT OR REPLACE INTO idempotency (project, slug, key, version, created_at) VALUES (?, ?, ?, ?, ?)`,
			project, w.Slug, w.IdempotencyKey, next, at); err != nil {
			return memory.WriteResult{}, fmt.Errorf("insert idempotency key: %w", err)
		}
	}
	return memory.WriteResult{Slug: w.Slug, Version: next, CreatedAt: fromNanos(at)}, nil
}

// Replay returns the result of the write that first used idempotency key on
// slug within the last 24 hours, if there was one. The service asks it when
// the write budget is used up: a retry writes nothing, so it is still answered.
func (s *Store) Replay(ctx context.Context, ref memory.ProjectRef, slug, key string) (memory.WriteResult, bool, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.WriteResult{}, false, err
	}
	now := time.Now().UTC()
	res, found, err := findReplay(ctx, ws.pool.reader, ref.Project, slug, key, now)
	if found || err != nil {
		return res, found, err
	}
	// The key's first write may have been a proposal (see proposalReplay).
	return proposalReplay(ctx, ws.pool.reader, ref.Project, slug, key, now)
}

// findReplay looks up an idempotency key's first result, Replayed set.
func findReplay(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, project, slug, key string, now time.Time) (memory.WriteResult, bool, error) {
	var ver int
	var at int64
	err := q.QueryRowContext(ctx, `SELECT version, created_at FROM idempotency
		WHERE project = ? AND slug = ? AND key = ? AND created_at >= ?`,
		project, slug, key, now.Add(-idempotencyTTL).UnixNano()).Scan(&ver, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.WriteResult{}, false, nil
	}
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	return memory.WriteResult{Slug: slug, Version: ver, CreatedAt: fromNanos(at), Replayed: true}, true, nil
}

// versionCols are the columns scanVersion reads, in order.
const versionCols = `v.slug, v.version, v.title, v.content, v.tags, v.agent, v.created_at, v.deleted, v.valid_until, v.supersedes`

// latestCols are versionCols of a version read with its entry, and the
// entry's superseded_by (scanLatest).
const latestCols = versionCols + `, e.superseded_by`

// scanVersion reads versionCols (plus extra destinations after them).
func scanVersion(sc interface{ Scan(...any) error }, extra ...any) (memory.Version, error) {
	var v memory.Version
	var tags, supersedes string
	var at int64
	var until sql.NullInt64
	dest := append([]any{&v.Slug, &v.Version, &v.Title, &v.Content, &tags, &v.Agent, &at, &v.Deleted, &until, &supersedes}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return v, err
	}
	v.CreatedAt = fromNanos(at)
	v.ValidUntil = timeOrNil(until)
	var err error
	if v.Tags, err = decodeTags(tags); err != nil {
		return v, err
	}
	v.Supersedes, err = decodeSupersedes(supersedes)
	return v, err
}

// scanLatest reads latestCols (plus extra destinations after them).
func scanLatest(sc interface{ Scan(...any) error }, extra ...any) (memory.Version, error) {
	var by sql.NullString
	v, err := scanVersion(sc, append([]any{&by}, extra...)...)
	v.SupersededBy = by.String
	return v, err
}

// Get returns a version of a slug (0: the latest, tombstones included) and
// the slug's latest version number. One statement, so both come from one
// snapshot.
func (s *Store) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	if err := memory.ValidateSlug(slug); err != nil {
		return memory.Version{}, 0, err
	}
	if version < 0 {
		return memory.Version{}, 0, memory.Errorf(memory.CodeInvalid, "version %d must not be negative", version)
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.Version{}, 0, err
	}
	// Only the latest version is cached; an explicit one reads SQLite.
	if version == 0 {
		if v, ok := ws.cachedLatest(ref.Project, slug); ok {
			return v, v.Version, nil
		}
	}
	seq := ws.latestSeq()
	var latest int
	v, err := scanLatest(ws.pool.reader.QueryRowContext(ctx, getSQL, ref.Project, slug, version), &latest)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Version{}, 0, s.notFound(ctx, ws, ref, slug, version)
	}
	if err != nil {
		return memory.Version{}, 0, fmt.Errorf("get %s v%d: %w", slug, version, err)
	}
	if v.Version != latest {
		// A supersession is the entry's state: it concerns its latest version.
		v.SupersededBy = ""
	} else {
		ws.fillLatest(ref.Project, v, seq)
	}
	return v, latest, nil
}

// getSQL selects version ?3 (0: the latest) of slug ?2 of project ?1 and
// the slug's latest version number: one entries lookup, one versions
// lookup. +?: see stmtCacheSize.
const getSQL = `SELECT ` + latestCols + `, e.latest_version
	FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug
	WHERE e.project = +?1 AND e.slug = +?2 AND v.version = (CASE WHEN +?3 = 0 THEN e.latest_version ELSE +?3 END)`

// notFound builds the not_found error of Get: either the slug or only the
// asked version is missing.
func (s *Store) notFound(ctx context.Context, ws *workspace, ref memory.ProjectRef, slug string, version int) error {
	var latest int
	err := ws.pool.reader.QueryRowContext(ctx, `SELECT latest_version FROM entries WHERE project = ? AND slug = ?`,
		ref.Project, slug).Scan(&latest)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", slug, err)
	}
	return memory.Errorf(memory.CodeNotFound, "entry %q has no version %d (latest is %d)", slug, version, latest)
}

// Latest returns the latest version of a slug, tombstone included, or
// not_found if the slug never existed. The search index uses it to take its
// state from the database rather than from the caller.
func (s *Store) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	v, _, err := s.Get(ctx, ref, slug, 0)
	return v, err
}

// latestManyChunk bounds the slugs of one LatestMany statement (SQLite's
// limit on bound parameters is far above it).
const latestManyChunk = 500

// LatestMany is Latest for several slugs of a project, read with one
// statement per chunk of slugs: the search index rereads a whole refresh
// batch at once. Slugs that never existed are absent from the map.
func (s *Store) LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error) {
	for _, slug := range slugs {
		if err := memory.ValidateSlug(slug); err != nil {
			return nil, err
		}
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := make(map[string]memory.Version, len(slugs))
	slugs = ws.cachedLatestMany(ref.Project, slugs, out)
	seq := ws.latestSeq()
	for chunk := range slices.Chunk(slugs, latestManyChunk) {
		n := latestManyArity(len(chunk))
		args := make([]any, 0, n+1)
		args = append(args, ref.Project)
		for _, slug := range chunk {
			args = append(args, slug)
		}
		for len(args) <= n {
			args = append(args, chunk[0]) // a repeated slug matches its row once
		}
		if err := s.latestChunk(ctx, ws, args, seq, out); err != nil {
			return nil, fmt.Errorf("latest of %d slugs in %s: %w", len(slugs), ref, err)
		}
	}
	return out, nil
}

// latestManyArity is the number of slugs a LatestMany statement binds for
// n: a power of two up to latestManyChunk, padded with a repeated slug.
// With the latest-version cache a recall reads only the hits it missed, any
// number of them; a few shapes keep every statement in each connection's
// statement cache (stmtCacheSize) instead of pushing others out.
func latestManyArity(n int) int {
	a := 1
	for a < n {
		a *= 2
	}
	return min(a, latestManyChunk)
}

// latestManySQL selects the latest versions of n slugs of project ?1.
//
// CROSS JOIN makes SQLite loop over entries first, one primary-key lookup per
// slug, then fetch exactly one version row each by the unique index
// (project, slug, version). With a plain JOIN and about ten slugs or more
// its planner (without ANALYZE statistics) chose versions as the outer loop
// and walked every version of every slug: 2 ms instead of 50 µs for ten
// contested slugs with 1,000 versions each. Picking the latest versions in
// an IN subquery instead plans as well but builds two temporary indexes per
// run, 25-40 µs more for ten slugs. +?: see stmtCacheSize.
func latestManySQL(n int) string {
	return `SELECT ` + latestCols + `
		FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
		WHERE e.project = +?1 AND e.slug IN (+?` + strings.Repeat(", +?", n-1) + `)`
}

// latestChunk reads the latest versions of args[1:] in project args[0] into
// out and offers them to the cache (seq: taken before the read).
func (s *Store) latestChunk(ctx context.Context, ws *workspace, args []any, seq uint64, out map[string]memory.Version) error {
	rows, err := ws.pool.reader.QueryContext(ctx, latestManySQL(len(args)-1), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scanLatest(rows)
		if err != nil {
			return err
		}
		out[v.Slug] = v
		ws.fillLatest(args[0].(string), v, seq)
	}
	return rows.Err()
}

// ScanLatest calls fn with the latest live version of every entry of a
// project, ordered by slug, and stops at fn's first error: ScanLatestSeq
// without the mark.
func (s *Store) ScanLatest(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) error {
	_, err := s.ScanLatestSeq(ctx, ref, fn)
	return err
}

// History lists a slug's versions newest first (limit: memory.DefaultHistoryLimit
// when 0). The service bounds the limit of a client's call; the store's own
// callers (checks, tools) may read a whole history.
func (s *Store) History(ctx context.Context, ref memory.ProjectRef, slug string, limit int) ([]memory.VersionInfo, error) {
	return s.history(ctx, ref, slug, limit, time.Time{})
}

// history is History of the versions created at or before at (zero: all).
func (s *Store) history(ctx context.Context, ref memory.ProjectRef, slug string, limit int, at time.Time) ([]memory.VersionInfo, error) {
	if err := memory.ValidateSlug(slug); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = memory.DefaultHistoryLimit
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	upTo := int64(math.MaxInt64)
	if !at.IsZero() {
		upTo = at.UnixNano()
	}
	// length() of a BLOB counts bytes, which is what Size (len(content))
	// means. +?: see stmtCacheSize.
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT version, title, agent, created_at, deleted, length(CAST(content AS BLOB))
		FROM versions WHERE project = +? AND slug = +? AND created_at <= +? ORDER BY version DESC LIMIT +?`, ref.Project, slug, upTo, limit)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", slug, err)
	}
	defer rows.Close()
	out := []memory.VersionInfo{}
	for rows.Next() {
		var vi memory.VersionInfo
		var created int64
		if err := rows.Scan(&vi.Version, &vi.Title, &vi.Agent, &created, &vi.Deleted, &vi.Size); err != nil {
			return nil, fmt.Errorf("history %s: %w", slug, err)
		}
		vi.CreatedAt = fromNanos(created)
		out = append(out, vi)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", slug, err)
	}
	switch {
	case len(out) > 0:
		return out, nil
	case at.IsZero():
		return nil, memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	}
	return nil, memory.Errorf(memory.CodeNotFound, "entry %q did not exist at %s", slug, at.Format(time.RFC3339))
}
