package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"munin/internal/memory"
)

// The queries in this file serve people browsing a project (the web UI);
// the filter and row types are memory's (LogFilter, SearchRow, MissedQuery).

// EntryStats counts a project's live entries and returns the time of its
// last write (zero if it has none; a forget counts as a write).
func (s *Store) EntryStats(ctx context.Context, ref memory.ProjectRef) (live int, lastWrite time.Time, err error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, time.Time{}, err
	}
	var last sql.NullInt64
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE deleted = 0), max(updated_at)
		FROM entries WHERE project = ?`, ref.Project).Scan(&live, &last); err != nil {
		return 0, time.Time{}, fmt.Errorf("entry stats of %s: %w", ref, err)
	}
	if last.Valid {
		lastWrite = fromNanos(last.Int64)
	}
	return live, lastWrite, nil
}

// ListEntries returns one page of a project's live entries, or with
// f.Forgotten its forgotten ones, in f.Order (memory.OrderUpdated,
// memory.OrderSlug or memory.OrderTitle), optionally only those carrying
// f.Tag, and the number of matching entries in all. Each row names the agent
// of the latest version; a forgotten entry shows the title and tags of the
// version before its tombstone (a tombstone has none), and the tag filter
// applies to those.
func (s *Store) ListEntries(ctx context.Context, ref memory.ProjectRef, f memory.EntryFilter) ([]memory.EntrySummary, int, error) {
	// The order, once for the entries (e) and once for the page (p).
	var orderBy string
	switch f.Order {
	case memory.OrderUpdated, "":
		orderBy = "%[1]s.updated_at DESC, %[1]s.slug"
	case memory.OrderSlug:
		orderBy = "%[1]s.slug"
	case memory.OrderTitle:
		orderBy = "%[2]s COLLATE NOCASE, %[1]s.slug"
	default:
		return nil, 0, memory.Errorf(memory.CodeInvalid, "order %q must be updated, slug or title", f.Order)
	}
	if f.Offset < 0 {
		return nil, 0, memory.Errorf(memory.CodeInvalid, "offset must not be negative, got %d", f.Offset)
	}
	limit := clampLimit(f.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	// A live entry's row holds its title and tags; a forgotten one's are
	// those of the version before its tombstone (shown). The page's rows
	// join their latest version for its agent. +?: see stmtCacheSize.
	from, title, tags := `FROM entries e`, `e.title`, `e.tags`
	if f.Forgotten {
		from += ` JOIN versions shown ON shown.project = e.project AND shown.slug = e.slug
			AND shown.version = e.latest_version - 1`
		title, tags = `shown.title`, `shown.tags`
	}
	where := `e.project = +? AND e.deleted = +?`
	args := []any{ref.Project, f.Forgotten}
	if f.Tag != "" {
		where += ` AND EXISTS (SELECT 1 FROM json_each(` + tags + `) WHERE json_each.value = +?)`
		args = append(args, f.Tag)
	}
	var total int
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) `+from+` WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count entries of %s: %w", ref, err)
	}
	// The page is chosen first and only its rows join their latest version
	// (for the agent): joined before the sort, every entry of the project
	// would read its version row.
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT p.slug, p.title, p.latest_version, p.tags,
		p.updated_at, p.valid_until, p.superseded_by, v.agent FROM (
			SELECT e.project, e.slug, `+title+` AS title, e.latest_version, `+tags+` AS tags,
				e.updated_at, e.valid_until, e.superseded_by `+from+`
			WHERE `+where+` ORDER BY `+fmt.Sprintf(orderBy, "e", "title")+` LIMIT +? OFFSET +?) p
		JOIN versions v ON v.project = p.project AND v.slug = p.slug AND v.version = p.latest_version
		ORDER BY `+fmt.Sprintf(orderBy, "p", "p.title"), append(args, limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list entries of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.EntrySummary{}
	for rows.Next() {
		var e memory.EntrySummary
		var tags string
		var at int64
		var until sql.NullInt64
		var by sql.NullString
		if err := rows.Scan(&e.Slug, &e.Title, &e.Version, &tags, &at, &until, &by, &e.Agent); err != nil {
			return nil, 0, fmt.Errorf("list entries of %s: %w", ref, err)
		}
		e.ValidUntil, e.SupersededBy = timeOrNil(until), by.String
		if e.Tags, err = decodeTags(tags); err != nil {
			return nil, 0, fmt.Errorf("list entries of %s: %w", ref, err)
		}
		e.UpdatedAt = fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list entries of %s: %w", ref, err)
	}
	return out, total, nil
}

// logWhere builds the WHERE clause (without "WHERE") for a log table. +?:
// see stmtCacheSize.
func logWhere(f memory.LogFilter, project string, withSlug bool) (string, []any) {
	var sb strings.Builder
	sb.WriteString("project = +?")
	args := []any{project}
	add := func(cond string, v any) {
		sb.WriteString(" AND " + cond)
		args = append(args, v)
	}
	if f.Agent != "" {
		add("agent = +?", f.Agent)
	}
	if withSlug && f.PrivateReview {
		// Pending and rejected proposals are their proposer's and the
		// reviewers' business: a reader sees only its own agent's propose rows.
		add("(action NOT IN ('propose', 'reject') OR (action = 'propose' AND agent = +?))", f.Viewer)
	}
	if withSlug && f.Slug != "" {
		if strings.HasSuffix(f.Slug, "/") {
			add("substr(slug, 1, +?) = +?", len(f.Slug))
			args = append(args, f.Slug)
		} else {
			add("slug = +?", f.Slug)
		}
	}
	if !f.Since.IsZero() {
		add("at >= +?", f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		add("at < +?", f.Until.UnixNano())
	}
	if f.BeforeID > 0 {
		add("id < +?", f.BeforeID)
	}
	if f.MissesOnly {
		sb.WriteString(" AND hits = 0")
	}
	return sb.String(), args
}

// AuditRows returns a project's audit rows matching f, newest first
// (limit: memory.DefaultHistoryLimit when 0, at most memory.MaxHistoryLimit). Page on with BeforeID = the last row's ID.
func (s *Store) AuditRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error) {
	limit := clampLimit(f.Limit, memory.DefaultHistoryLimit, memory.MaxHistoryLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	where, args := logWhere(f, ref.Project, true)
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT id, agent, action, slug, version, at, coalesce(client, '') FROM audit_log
		WHERE `+where+` ORDER BY id DESC LIMIT +?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("audit log of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.AuditRow{}
	for rows.Next() {
		var r memory.AuditRow
		var at int64
		if err := rows.Scan(&r.ID, &r.Agent, &r.Action, &r.Slug, &r.Version, &at, &r.Client); err != nil {
			return nil, fmt.Errorf("audit log of %s: %w", ref, err)
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SearchRows returns a project's search-log rows matching f, newest first
// (limit: memory.DefaultHistoryLimit when 0, at most memory.MaxHistoryLimit). f.Slug is ignored.
func (s *Store) SearchRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error) {
	limit := clampLimit(f.Limit, memory.DefaultHistoryLimit, memory.MaxHistoryLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	where, args := logWhere(f, ref.Project, false)
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT id, agent, query, hits, duration_ms, at FROM search_log
		WHERE `+where+` ORDER BY id DESC LIMIT +?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("search log of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.SearchRow{}
	for rows.Next() {
		r := memory.SearchRow{SearchLogRow: memory.SearchLogRow{Project: ref}}
		var at int64
		if err := rows.Scan(&r.ID, &r.Agent, &r.Query, &r.Hits, &r.DurationMS, &at); err != nil {
			return nil, fmt.Errorf("search log of %s: %w", ref, err)
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// MissedQueries returns the queries of a project that found nothing since
// the given time, most asked first: what the agents look for and miss.
func (s *Store) MissedQueries(ctx context.Context, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error) {
	limit = clampLimit(limit, memory.DefaultMissedLimit, memory.MaxMissedLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	// +?: see stmtCacheSize.
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT query, count(*), max(at) FROM search_log
		WHERE project = +? AND at >= +? AND hits = 0 GROUP BY query ORDER BY count(*) DESC, max(at) DESC LIMIT +?`,
		ref.Project, since.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("missed queries of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.MissedQuery{}
	for rows.Next() {
		var m memory.MissedQuery
		var at int64
		if err := rows.Scan(&m.Query, &m.Count, &at); err != nil {
			return nil, fmt.Errorf("missed queries of %s: %w", ref, err)
		}
		m.Last = fromNanos(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// KeyByID returns a key by id, revoked or not, or not_found. Web sessions
// hold a key id and look the key up on every request, so that a revoked key
// ends its sessions at once.
func (s *Store) KeyByID(ctx context.Context, id int64) (memory.Key, error) {
	k, err := scanKey(s.control.reader.QueryRowContext(ctx, `SELECT `+keyCols+` FROM keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Key{}, memory.Errorf(memory.CodeNotFound, "key %d not found", id)
	}
	if err != nil {
		return memory.Key{}, fmt.Errorf("key %d: %w", id, err)
	}
	return k, nil
}
