package store

import (
	"context"
	"database/sql"
	"errors"
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

// Search-log pruning deletes in chunks, each one write through the
// workspace's writer, so that a large backlog never holds the writer for
// long: other writes of the workspace are committed between the chunks.
const (
	pruneChunk = 1000
	// pruneMaxChunks bounds one call; whatever is left goes at the next one.
	pruneMaxChunks = 100
)

// PruneSearchLog deletes a project's search-log rows older than before (zero:
// none by age) and those beyond its keep newest (≤ 0: none by count), and
// returns how many it deleted. "Newest" is by time, then by id.
func (s *Store) PruneSearchLog(ctx context.Context, ref memory.ProjectRef, before time.Time, keep int) (int, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("prune search log: %w", err)
	}
	deleted := 0
	var old bool
	if !before.IsZero() {
		// Asked of a reader first, so a prune with nothing to do costs the
		// writer nothing.
		err := ws.pool.reader.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM search_log WHERE project = ? AND at < ?)`,
			ref.Project, before.UnixNano()).Scan(&old)
		if err != nil {
			return 0, fmt.Errorf("prune search log of %s: %w", ref, err)
		}
	}
	if old {
		n, err := ws.deleteChunks(ctx, `DELETE FROM search_log WHERE id IN
			(SELECT id FROM search_log WHERE project = +? AND at < +? LIMIT +?)`, ref.Project, before.UnixNano())
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("prune search log of %s by age: %w", ref, err)
		}
	}
	if keep <= 0 {
		return deleted, nil
	}
	// The newest row beyond the keep newest, read without the writer; rows
	// added meanwhile are newer, so it stays beyond.
	var at, id int64
	err = ws.pool.reader.QueryRowContext(ctx, `SELECT at, id FROM search_log WHERE project = +?
		ORDER BY at DESC, id DESC LIMIT 1 OFFSET +?`, ref.Project, keep).Scan(&at, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return deleted, nil
	}
	if err != nil {
		return deleted, fmt.Errorf("prune search log of %s: %w", ref, err)
	}
	n, err := ws.deleteChunks(ctx, `DELETE FROM search_log WHERE id IN
		(SELECT id FROM search_log WHERE project = +?1 AND (at < +?2 OR (at = +?2 AND id <= +?3)) LIMIT +?4)`, ref.Project, at, id)
	deleted += n
	if err != nil {
		return deleted, fmt.Errorf("prune search log of %s by rows: %w", ref, err)
	}
	return deleted, nil
}

// deleteChunks runs del (whose last parameter is the chunk size) through the
// writer until a chunk deletes less than a full one, at most pruneMaxChunks
// times, and returns the rows deleted. The statements of the prune write
// their values +?: see stmtCacheSize.
func (ws *workspace) deleteChunks(ctx context.Context, del string, args ...any) (int, error) {
	args = append(args, pruneChunk)
	total := 0
	for range pruneMaxChunks {
		v, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
			res, err := tx.Exec(del, args...)
			if err != nil {
				return nil, err
			}
			return res.RowsAffected()
		})
		if err != nil {
			return total, err
		}
		n := int(v.(int64))
		total += n
		if n < pruneChunk {
			break
		}
	}
	return total, nil
}
