package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// DefaultBackupStep is how many pages one step of the online backup copies.
const DefaultBackupStep = 256

// BackupOptions tune Backup; the zero value is a good default.
type BackupOptions struct {
	// StepPages is the pages copied per backup step (default DefaultBackupStep).
	// Between steps the context is checked, so a long backup can be stopped.
	StepPages int
	// Progress, if set, is called after each file was copied and verified.
	Progress func(BackupFile)
}

// BackupFile describes the verified copy of one file.
type BackupFile struct {
	// Name is the file name inside the data directory ("_control.db", "acme.db").
	Name string
	// Pages and Bytes are the size of the copy.
	Pages int
	Bytes int64
	// Versions counts the versions in a workspace copy (-1 for the control database).
	Versions int
	// Duration is the time spent copying and verifying the file.
	Duration time.Duration
}

// BackupReport is the outcome of Backup.
type BackupReport struct {
	Files    []BackupFile
	Duration time.Duration
}

// Backup copies the control database and every workspace file of dataDir
// into dest with SQLite's online backup API, while a server may be serving
// and writing the same files from another process.
//
// Each file is read through its own read-only connection inside one read
// transaction that stays open for the whole copy: in WAL mode this is a
// consistent snapshot, and the writer never waits for it (readers do not
// block writers; only the WAL checkpoint cannot pass the snapshot until the
// copy is done). Holding the transaction also keeps the backup from
// restarting whenever another connection commits, which it otherwise would
// after every step under a steady write load. The workspaces copied are the
// ones in the control snapshot; a workspace created later is not in the
// backup, but every version committed before its file's snapshot is.
//
// Every copy is then opened and must pass PRAGMA integrity_check, and a
// workspace copy must hold exactly as many versions as its source snapshot.
// dest must not exist or be an empty directory: a backup never overwrites.
// The result is a data directory that `munin serve --data dest` can use.
func Backup(ctx context.Context, dataDir, dest string, opts BackupOptions) (rep BackupReport, err error) {
	if opts.StepPages <= 0 {
		opts.StepPages = DefaultBackupStep
	}
	start := time.Now()
	if err := CheckDataDir(dataDir); err != nil {
		return rep, fmt.Errorf("backup: %w", err)
	}
	created, err := prepareDest(dest)
	if err != nil {
		return rep, err
	}
	// A backup that fails (or is interrupted) leaves nothing behind that
	// looks like a data directory: dest was new or empty, so empty it again.
	defer func() {
		if err != nil {
			err = errors.Join(err, discardDest(dest, created))
		}
	}()
	var workspaces []string
	files := []string{controlFile}
	for i := 0; i < len(files); i++ {
		name := files[i]
		f, err := backupFile(ctx, filepath.Join(dataDir, name), filepath.Join(dest, name), opts.StepPages,
			func(ctx context.Context, conn *sql.Conn) (int, error) {
				if name == controlFile {
					ws, err := listWorkspaces(ctx, conn)
					workspaces = ws
					return -1, err
				}
				return countVersions(ctx, conn)
			})
		if err != nil {
			return rep, fmt.Errorf("backup %s: %w", name, err)
		}
		f.Name = name
		rep.Files = append(rep.Files, f)
		if opts.Progress != nil {
			opts.Progress(f)
		}
		if name == controlFile {
			for _, w := range workspaces {
				files = append(files, w+".db")
			}
		}
	}
	if err := syncDir(dest); err != nil {
		return rep, fmt.Errorf("backup: %w", err)
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// prepareDest creates dest (created), or accepts it if it is an empty directory.
func prepareDest(dest string) (created bool, err error) {
	ents, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dest, 0o750); err != nil {
			return false, fmt.Errorf("backup: create %s: %w", dest, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("backup: destination %s: %w", dest, err)
	case len(ents) > 0:
		return false, fmt.Errorf("backup: destination %s is not empty (%d entries); a backup never overwrites, choose a new or empty directory", dest, len(ents))
	}
	return false, nil
}

// discardDest removes what a failed backup wrote: dest itself if the backup
// created it, else everything inside it (it was empty before).
func discardDest(dest string, created bool) error {
	if created {
		return os.RemoveAll(dest)
	}
	ents, err := os.ReadDir(dest)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dest, e.Name())))
	}
	return errors.Join(errs...)
}

// listWorkspaces reads the workspace names inside the open snapshot of the
// control database; it also starts that snapshot.
func listWorkspaces(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name FROM workspaces ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// countVersions counts the versions of a workspace file.
func countVersions(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM versions").Scan(&n); err != nil {
		return 0, fmt.Errorf("count versions: %w", err)
	}
	return n, nil
}

// backupFile copies src to dst inside one read transaction on src. snapshot
// runs first in that transaction (starting it) and returns the number of
// versions the copy must hold (-1: not a workspace file). The copy is then
// verified.
func backupFile(ctx context.Context, src, dst string, step int, snapshot func(context.Context, *sql.Conn) (int, error)) (BackupFile, error) {
	start := time.Now()
	var f BackupFile
	srcDB, err := sql.Open("sqlite3", readerDSN(src))
	if err != nil {
		return f, err
	}
	defer srcDB.Close()
	dstDB, err := sql.Open("sqlite3", fileURI(dst)+fmt.Sprintf("?_busy_timeout=%d", busyTimeoutMS))
	if err != nil {
		return f, err
	}
	defer dstDB.Close()

	srcConn, err := srcDB.Conn(ctx)
	if err != nil {
		return f, fmt.Errorf("open source: %w", err)
	}
	defer srcConn.Close()
	dstConn, err := dstDB.Conn(ctx)
	if err != nil {
		return f, fmt.Errorf("open copy: %w", err)
	}
	defer dstConn.Close()

	// BEGIN is deferred: the snapshot's first read starts the read transaction.
	if _, err := srcConn.ExecContext(ctx, "BEGIN"); err != nil {
		return f, fmt.Errorf("begin snapshot: %w", err)
	}
	defer func() { _, _ = srcConn.ExecContext(context.Background(), "ROLLBACK") }()
	want, err := snapshot(ctx, srcConn)
	if err != nil {
		return f, err
	}
	if err := copyPages(ctx, srcConn, dstConn, step); err != nil {
		return f, err
	}
	if err := dstConn.Close(); err != nil {
		return f, fmt.Errorf("close copy: %w", err)
	}
	f, err = VerifyFile(ctx, dst, want >= 0)
	if err != nil {
		return f, err
	}
	if want >= 0 && f.Versions != want {
		return f, fmt.Errorf("copy holds %d versions, its source snapshot %d", f.Versions, want)
	}
	f.Duration = time.Since(start)
	return f, nil
}

// copyPages runs the SQLite backup from src to dst, step pages at a time.
func copyPages(ctx context.Context, src, dst *sql.Conn, step int) error {
	return src.Raw(func(sc any) error {
		return dst.Raw(func(dc any) error {
			s, ok1 := sc.(*sqlite3.SQLiteConn)
			d, ok2 := dc.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return fmt.Errorf("backup needs the mattn/go-sqlite3 driver, got %T and %T", sc, dc)
			}
			b, err := d.Backup("main", s, "main")
			if err != nil {
				return fmt.Errorf("start backup: %w", err)
			}
			for {
				done, err := b.Step(step)
				if err != nil {
					_ = b.Finish()
					return fmt.Errorf("backup step: %w", err)
				}
				if done {
					break
				}
				if err := ctx.Err(); err != nil {
					_ = b.Finish()
					return err
				}
			}
			if err := b.Finish(); err != nil {
				return fmt.Errorf("finish backup: %w", err)
			}
			return nil
		})
	})
}

// VerifyFile opens a copied file, runs PRAGMA integrity_check (which must
// answer exactly "ok") and reads its size and, for a workspace file, its
// version count.
func VerifyFile(ctx context.Context, path string, workspace bool) (BackupFile, error) {
	f := BackupFile{Name: filepath.Base(path), Versions: -1}
	db, err := sql.Open("sqlite3", readerDSN(path))
	if err != nil {
		return f, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return f, fmt.Errorf("integrity_check %s: %w", path, err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return f, fmt.Errorf("integrity_check %s: %w", path, err)
		}
		problems = append(problems, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return f, fmt.Errorf("integrity_check %s: %w", path, err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return f, fmt.Errorf("integrity_check %s failed: %q", path, problems)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&f.Pages); err != nil {
		return f, fmt.Errorf("page_count %s: %w", path, err)
	}
	if workspace {
		if f.Versions, err = countVersions(ctx, db); err != nil {
			return f, fmt.Errorf("%s: %w", path, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return f, err
	}
	f.Bytes = st.Size()
	return f, nil
}

// syncDir makes the new directory entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
