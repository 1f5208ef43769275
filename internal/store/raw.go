package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// RawWriter is a workspace file opened the way the server's writer opens it
// (same DSN: journal mode, synchronous, busy timeout, BEGIN IMMEDIATE) on one
// connection, bypassing the store. It is the baseline the load test compares
// the full write path with: what SQLite alone does on this machine.
type RawWriter struct {
	db   *sql.DB
	next int
}

// OpenRawWriter creates and migrates a workspace file at path with exactly
// the pragmas the server uses for synchronous ("" means the server default).
func OpenRawWriter(ctx context.Context, path, synchronous string) (*RawWriter, error) {
	if synchronous == "" {
		synchronous = DefaultSynchronous
	}
	db, err := sql.Open("sqlite3", writerDSN(path, strings.ToUpper(synchronous)))
	if err != nil {
		return nil, fmt.Errorf("open raw writer %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db, schemaWorkspace); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open raw writer %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO entries (project, slug, latest_version, title, updated_at) VALUES ('p', 's', 0, '', 0)`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open raw writer %s: %w", path, err)
	}
	return &RawWriter{db: db}, nil
}

// Insert writes rows version rows (the row shape of a remember) in one
// BEGIN IMMEDIATE … COMMIT transaction.
func (r *RawWriter) Insert(rows int, content string) error {
	tx, err := r.db.Begin()
	if err != nil {
		return fmt.Errorf("raw insert: %w", err)
	}
	for range rows {
		r.next++
		if _, err := tx.Exec(`INSERT INTO versions (project, slug, version, title, content, tags, agent, deleted, created_at)
			VALUES ('p', 's', ?, 'title', ?, '["a","b"]', 'bench', 0, ?)`, r.next, content, time.Now().UnixNano()); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("raw insert: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("raw commit: %w", err)
	}
	return nil
}

// Close closes the connection.
func (r *RawWriter) Close() error { return r.db.Close() }
