package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"munin/internal/memory"
)

// A project's settings (table project_settings of its workspace file):
// review, whether its write keys propose, and similar, whether remember
// looks for duplicates. Every write needs them, so the workspace's writer
// keeps them in memory (settingsCache) instead of reading the table inside
// each write's transaction.

// projectSettings are one project's settings.
type projectSettings struct {
	Review  string // memory.ReviewOff or memory.ReviewAgents
	Similar string // memory.SimilarOn or memory.SimilarOff
}

// defaultSettings are those of a project without a row.
var defaultSettings = projectSettings{Review: memory.ReviewOff, Similar: memory.SimilarOn}

// setting is one column of project_settings: its name (a constant, the
// only text that goes into the SQL), how a value is checked and where it
// lives in projectSettings.
type setting struct {
	column string
	parse  func(string) (string, error)
	field  func(*projectSettings) *string
}

var (
	reviewSetting  = setting{"review", memory.ParseReview, func(p *projectSettings) *string { return &p.Review }}
	similarSetting = setting{"similar", memory.ParseSimilarSetting, func(p *projectSettings) *string { return &p.Similar }}
)

// settingsCache is the writer's copy of its workspace's project_settings.
// Only the writer goroutine touches it — the writes run there, and only
// writes change the table, through this writer — so it needs no lock and
// is never stale: invariant 1
// (docs/architecture.md#invariant-1-one-writer-per-workspace). A setter
// updates it inside its write's transaction, so the writes after it in the
// same batch see the new value, as they see the new row; a batch that is
// rolled back drops the whole copy (drop), and the next write reads the
// table again.
type settingsCache struct {
	byProject map[string]projectSettings // nil: not read yet, or dropped
}

// get returns a project's settings, reading the whole table in tx the
// first time (a workspace holds few projects).
func (c *settingsCache) get(tx *sql.Tx, project string) (projectSettings, error) {
	if c.byProject == nil {
		if err := c.load(tx); err != nil {
			return projectSettings{}, err
		}
	}
	if ps, ok := c.byProject[project]; ok {
		return ps, nil
	}
	return defaultSettings, nil
}

// load reads project_settings into the cache.
func (c *settingsCache) load(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT project, review, similar FROM project_settings`)
	if err != nil {
		return fmt.Errorf("read project settings: %w", err)
	}
	defer rows.Close()
	m := map[string]projectSettings{}
	for rows.Next() {
		var project string
		var ps projectSettings
		if err := rows.Scan(&project, &ps.Review, &ps.Similar); err != nil {
			return fmt.Errorf("read project settings: %w", err)
		}
		m[project] = ps
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read project settings: %w", err)
	}
	c.byProject = m
	return nil
}

// drop forgets the cache; the writer calls it whenever it rolls a
// transaction back, since a setter in it may have changed the copy.
func (c *settingsCache) drop() { c.byProject = nil }

// write is applyWrite with the project's settings from the writer's cache;
// the result tells whether the project's similar setting is off, so that
// the service learns it without reading it.
func (ws *workspace) write(tx *sql.Tx, project string, w memory.Write, tags string) (memory.WriteResult, error) {
	ps, err := ws.settings.get(tx, project)
	if err != nil {
		return memory.WriteResult{}, err
	}
	res, err := applyWrite(tx, project, w, tags, ps)
	if err != nil {
		return memory.WriteResult{}, err
	}
	res.SimilarOff = ps.Similar == memory.SimilarOff
	return res, nil
}

// SetReview sets whether the writes of a project's write keys become
// proposals (memory.ReviewOff or memory.ReviewAgents). It goes through the
// workspace's writer, so a write queued after it is decided by it.
func (s *Store) SetReview(ctx context.Context, ref memory.ProjectRef, review string) error {
	return s.setSetting(ctx, ref, reviewSetting, review)
}

// Review reads a project's review setting (memory.ReviewOff unless set).
func (s *Store) Review(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return s.readSetting(ctx, ref, reviewSetting)
}

// SetSimilar sets whether remember looks for duplicates of a new slug in a
// project (memory.SimilarOn or memory.SimilarOff). It goes through the
// workspace's writer, so a write queued after it reports it (SimilarOff).
func (s *Store) SetSimilar(ctx context.Context, ref memory.ProjectRef, similar string) error {
	return s.setSetting(ctx, ref, similarSetting, similar)
}

// SimilarSetting reads a project's similar setting (memory.SimilarOn
// unless set).
func (s *Store) SimilarSetting(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return s.readSetting(ctx, ref, similarSetting)
}

// setSetting writes one setting of a project in the workspace's writer and
// updates the writer's cache in the same transaction.
func (s *Store) setSetting(ctx context.Context, ref memory.ProjectRef, set setting, value string) error {
	if _, err := set.parse(value); err != nil {
		return err
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return err
	}
	_, err = ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		ps, err := ws.settings.get(tx, ref.Project)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(`INSERT INTO project_settings (project, `+set.column+`) VALUES (?, ?)
			ON CONFLICT (project) DO UPDATE SET `+set.column+` = excluded.`+set.column, ref.Project, value); err != nil {
			return nil, err
		}
		*set.field(&ps) = value
		ws.settings.byProject[ref.Project] = ps
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("set %s of %s: %w", set.column, ref, err)
	}
	return nil
}

// readSetting reads one setting of a project from the read pool (the
// writer's cache belongs to the writer goroutine); a project without a row
// has the default.
func (s *Store) readSetting(ctx context.Context, ref memory.ProjectRef, set setting) (string, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return "", err
	}
	var value string
	err = ws.pool.reader.QueryRowContext(ctx, `SELECT `+set.column+` FROM project_settings WHERE project = ?`, ref.Project).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		def := defaultSettings
		return *set.field(&def), nil
	}
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", set.column, ref, err)
	}
	return value, nil
}
