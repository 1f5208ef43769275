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

// ListEntries returns one page of a project's live entries in the given
// order (memory.OrderUpdated, memory.OrderSlug or memory.OrderTitle), optionally only those
// carrying tag, and the number of matching entries in all.
func (s *Store) ListEntries(ctx context.Context, ref memory.ProjectRef, tag, order string, offset, limit int) ([]memory.EntrySummary, int, error) {
	var orderBy string
	switch order {
	case memory.OrderUpdated, "":
		orderBy = "updated_at DESC, slug"
	case memory.OrderSlug:
		orderBy = "slug"
	case memory.OrderTitle:
		orderBy = "title COLLATE NOCASE, slug"
	default:
		return nil, 0, memory.Errorf(memory.CodeInvalid, "order %q must be updated, slug or title", order)
	}
	if offset < 0 {
		return nil, 0, memory.Errorf(memory.CodeInvalid, "offset must not be negative, got %d", offset)
	}
	limit = clampLimit(limit, memory.DefaultListLimit, memory.MaxListLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	// +?: see stmtCacheSize.
	where := `project = +? AND deleted = 0`
	args := []any{ref.Project}
	if tag != "" {
		where += ` AND EXISTS (SELECT 1 FROM json_each(entries.tags) WHERE json_each.value = +?)`
		args = append(args, tag)
	}
	var total int
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count entries of %s: %w", ref, err)
	}
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT slug, title, latest_version, tags, updated_at, valid_until, superseded_by FROM entries
		WHERE `+where+` ORDER BY `+orderBy+` LIMIT +? OFFSET +?`, append(args, limit, offset)...)
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
		if err := rows.Scan(&e.Slug, &e.Title, &e.Version, &tags, &at, &until, &by); err != nil {
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
