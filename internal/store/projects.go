package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"munin/internal/memory"
)

// EnsureProject creates the workspace (row and file) and the project if they
// are new. It is idempotent and safe under concurrency: the file is opened
// under the store's lock, and the rows are INSERT OR IGNORE on the control
// database's single writer.
func (s *Store) EnsureProject(ctx context.Context, ref memory.ProjectRef) (bool, error) {
	// Validate both names before anything touches the file system.
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if _, ok := s.projects.Load(ref); ok {
		return false, nil
	}
	// The file comes first: a workspace row never points at a file that was
	// not created and migrated.
	if _, err := s.workspace(ctx, ref.Workspace, true); err != nil {
		return false, fmt.Errorf("ensure project %s: %w", ref, err)
	}
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("ensure project %s: %w", ref, err)
	}
	defer func() { _ = tx.Rollback() }()
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO workspaces (name, created_at) VALUES (?, ?)`, ref.Workspace, now); err != nil {
		return false, fmt.Errorf("ensure workspace %s: %w", ref.Workspace, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO projects (workspace, name, created_at) VALUES (?, ?, ?)`,
		ref.Workspace, ref.Project, now)
	if err != nil {
		return false, fmt.Errorf("ensure project %s: %w", ref, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("ensure project %s: %w", ref, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("ensure project %s: commit: %w", ref, err)
	}
	s.projects.Store(ref, struct{}{})
	return n == 1, nil
}

// Project returns one project, or not_found.
func (s *Store) Project(ctx context.Context, ref memory.ProjectRef) (memory.ProjectInfo, error) {
	if err := ref.Validate(); err != nil {
		return memory.ProjectInfo{}, err
	}
	p := memory.ProjectInfo{Ref: ref}
	var at int64
	err := s.control.reader.QueryRowContext(ctx, `SELECT write_budget, write_budget_bytes, created_at FROM projects WHERE workspace = ? AND name = ?`,
		ref.Workspace, ref.Project).Scan(&p.WriteBudget, &p.WriteBudgetBytes, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.ProjectInfo{}, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	if err != nil {
		return memory.ProjectInfo{}, fmt.Errorf("project %s: %w", ref, err)
	}
	p.CreatedAt = fromNanos(at)
	return p, nil
}

// ListProjects returns every project of every workspace, ordered by
// workspace, then project.
func (s *Store) ListProjects(ctx context.Context) ([]memory.ProjectInfo, error) {
	rows, err := s.control.reader.QueryContext(ctx, `SELECT workspace, name, write_budget, write_budget_bytes, created_at FROM projects ORDER BY workspace, name`)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	defer rows.Close()
	out := []memory.ProjectInfo{}
	for rows.Next() {
		var p memory.ProjectInfo
		var at int64
		if err := rows.Scan(&p.Ref.Workspace, &p.Ref.Project, &p.WriteBudget, &p.WriteBudgetBytes, &at); err != nil {
			return nil, fmt.Errorf("list projects: %w", err)
		}
		p.CreatedAt = fromNanos(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return out, nil
}

// SetWriteBudget sets a project's writes per hour (0: the server default).
func (s *Store) SetWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget %d must not be negative", perHour)
	}
	res, err := s.control.writer.ExecContext(ctx, `UPDATE projects SET write_budget = ? WHERE workspace = ? AND name = ?`,
		perHour, ref.Workspace, ref.Project)
	if err != nil {
		return fmt.Errorf("set write budget of %s: %w", ref, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("set write budget of %s: %w", ref, err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	return nil
}

// SetWriteBudgetBytes sets a project's content bytes per hour (0: the server default).
func (s *Store) SetWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget of %d bytes must not be negative", perHour)
	}
	res, err := s.control.writer.ExecContext(ctx, `UPDATE projects SET write_budget_bytes = ? WHERE workspace = ? AND name = ?`,
		perHour, ref.Workspace, ref.Project)
	if err != nil {
		return fmt.Errorf("set write budget bytes of %s: %w", ref, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("set write budget bytes of %s: %w", ref, err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	return nil
}
