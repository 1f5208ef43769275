package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"munin/internal/memory"
)

// AppendSearchLog writes search-log rows. Rows are grouped by workspace and
// each group is one write through that workspace's writer, so they share a
// transaction with whatever else is being committed there.
func (s *Store) AppendSearchLog(ctx context.Context, rows []memory.SearchLogRow) error {
	groups := map[string][]memory.SearchLogRow{}
	var order []string
	for _, r := range rows {
		if err := r.Project.Validate(); err != nil {
			return err
		}
		if _, ok := groups[r.Project.Workspace]; !ok {
			order = append(order, r.Project.Workspace)
		}
		groups[r.Project.Workspace] = append(groups[r.Project.Workspace], r)
	}
	// Resolve every project before writing anything: bad input changes nothing.
	wss := make(map[string]*workspace, len(groups))
	for _, r := range rows {
		ws, err := s.requireProject(ctx, r.Project)
		if err != nil {
			return fmt.Errorf("search log: %w", err)
		}
		wss[r.Project.Workspace] = ws
	}
	now := time.Now()
	for _, name := range order {
		group := groups[name]
		_, err := wss[name].submit(ctx, func(tx *sql.Tx) (any, error) {
			for _, r := range group {
				at := r.At
				if at.IsZero() {
					at = now
				}
				if _, err := tx.Exec(`INSERT INTO search_log (project, agent, query, hits, duration_ms, at) VALUES (?, ?, ?, ?, ?, ?)`,
					r.Project.Project, r.Agent, r.Query, r.Hits, r.DurationMS, at.UnixNano()); err != nil {
					return nil, fmt.Errorf("insert search log row: %w", err)
				}
			}
			return nil, nil
		})
		if err != nil {
			return fmt.Errorf("search log of %s: %w", name, err)
		}
	}
	return nil
}

// SearchLog returns a project's most recent search-log rows, newest first
// (limit: default 50, at most 1000).
func (s *Store) SearchLog(ctx context.Context, ref memory.ProjectRef, limit int) ([]memory.SearchLogRow, error) {
	limit = clampLimit(limit, defaultHistoryLimit, maxHistoryLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT agent, query, hits, duration_ms, at FROM search_log
		WHERE project = ? ORDER BY id DESC LIMIT ?`, ref.Project, limit)
	if err != nil {
		return nil, fmt.Errorf("search log of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.SearchLogRow{}
	for rows.Next() {
		r := memory.SearchLogRow{Project: ref}
		var at int64
		if err := rows.Scan(&r.Agent, &r.Query, &r.Hits, &r.DurationMS, &at); err != nil {
			return nil, fmt.Errorf("search log of %s: %w", ref, err)
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// AuditLog returns a project's most recent audit rows, newest first
// (limit: default 50, at most 1000).
func (s *Store) AuditLog(ctx context.Context, ref memory.ProjectRef, limit int) ([]memory.AuditRow, error) {
	limit = clampLimit(limit, defaultHistoryLimit, maxHistoryLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT id, agent, action, slug, version, at FROM audit_log
		WHERE project = ? ORDER BY id DESC LIMIT ?`, ref.Project, limit)
	if err != nil {
		return nil, fmt.Errorf("audit log of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.AuditRow{}
	for rows.Next() {
		var r memory.AuditRow
		var at int64
		if err := rows.Scan(&r.ID, &r.Agent, &r.Action, &r.Slug, &r.Version, &at); err != nil {
			return nil, fmt.Errorf("audit log of %s: %w", ref, err)
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, rows.Err()
}
