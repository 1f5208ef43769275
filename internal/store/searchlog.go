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
