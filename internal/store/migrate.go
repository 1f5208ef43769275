package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The schema lives in numbered SQL files so that a reviewer reads plain SQL
// and an upgrade is "add the next file". The control database and the
// workspace files have separate histories because they evolve separately.
//
//go:embed migrations/control/*.sql migrations/workspace/*.sql
var migrationFS embed.FS

// Schema kinds, the directory names under migrations/.
const (
	schemaControl   = "control"
	schemaWorkspace = "workspace"
)

// migration is one numbered schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the steps of one schema, sorted by their number
// (the digits before the first underscore of the file name).
func loadMigrations(kind string) ([]migration, error) {
	dir := path.Join("migrations", kind)
	ents, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations %s: %w", kind, err)
	}
	var ms []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s/%s: name must be NNNN_name.sql", kind, e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s/%s: bad number", kind, e.Name())
		}
		b, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s/%s: %w", kind, e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		// Gaps or duplicates would make user_version ambiguous.
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations %s: expected step %d, found %s", kind, i+1, m.name)
		}
	}
	return ms, nil
}

// migrate applies the steps of kind that are newer than the file's
// PRAGMA user_version, each in its own transaction together with the bump of
// user_version, so a crash leaves the file at a whole step.
func migrate(ctx context.Context, db *sql.DB, kind string) error {
	ms, err := loadMigrations(kind)
	if err != nil {
		return err
	}
	var cur int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return fmt.Errorf("read user_version: %w", err)
	}
	if cur > len(ms) {
		return fmt.Errorf("schema %s is at version %d, newer than this binary (%d)", kind, cur, len(ms))
	}
	for _, m := range ms[cur:] {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %s/%s: %w", kind, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migration %s/%s: %w", kind, m.name, err)
		}
		// PRAGMA does not take bound parameters; the number is ours.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migration %s/%s: set user_version: %w", kind, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s/%s: commit: %w", kind, m.name, err)
		}
	}
	return nil
}

// SchemaVersion names the newest migration of the workspace files, e.g.
// "workspace/4": the nodes of a cluster must agree on it, since a file
// moves between them.
func SchemaVersion() (string, error) {
	ms, err := loadMigrations(schemaWorkspace)
	if err != nil || len(ms) == 0 {
		return "", fmt.Errorf("schema version: %v", err)
	}
	return fmt.Sprintf("%s/%d", schemaWorkspace, ms[len(ms)-1].version), nil
}
