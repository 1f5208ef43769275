package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// busyTimeoutMS bounds how long a connection waits for a lock. With one writer
// per file and WAL readers it should never be reached; it is a safety net
// (e.g. a checkpoint or another process such as the backup command).
const busyTimeoutMS = 5000

// stmtCacheSize lets each connection keep its prepared statements, so the
// hot write path does not re-parse the same SQL for every row.
//
// A kept statement is only reused as long as SQLite does not expire it, and
// SQLite expires one whose plan looked at a bound value as soon as that
// value is bound again. go-sqlite3 clears all bindings before every run, so
// such a statement is parsed and planned again on every run: 20-40 µs,
// several times what reading a few rows costs. SQLite 3.54's planner looks
// at the value of "LIMIT ?" and "OFFSET ?", and, in a join or a statement
// with ORDER BY, at the value of every "column = ?" that an index it
// considers does not use. The store's statements therefore either leave
// the planner nothing to look at (one table, no ORDER BY) or write their
// values behind a unary plus, "+?": the planner does not look through it,
// and it changes neither the value nor the plan (an index is used for
// "column = +?" as for "column = ?").
// TestStatementsArePreparedOnce runs every statement again with other
// values and fails if SQLite compiles one again.
const stmtCacheSize = 64

// pool is the pair of handles every SQLite file gets: exactly one writer
// connection, and a read-only pool that never waits for it (WAL).
type pool struct {
	path   string
	writer *sql.DB
	reader *sql.DB
}

// fileURI turns a path into a SQLite URI, escaping the characters that
// would otherwise end the path part.
func fileURI(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path)
}

// writerDSN is the DSN of the single writer connection. _busy_timeout comes
// first so that it already applies to the pragmas that follow; _txlock=immediate
// makes every transaction BEGIN IMMEDIATE, which takes the write lock up front
// instead of failing to upgrade a read lock later ("database is locked").
func writerDSN(path, synchronous string) string {
	return fmt.Sprintf("%s?_busy_timeout=%d&_journal_mode=WAL&_foreign_keys=on&_synchronous=%s&_txlock=immediate&_stmt_cache_size=%d",
		fileURI(path), busyTimeoutMS, synchronous, stmtCacheSize)
}

// readerDSN is the DSN of the read pool. mode=ro makes a write through it
// impossible; journal_mode is not set because it is a property of the file,
// set by the writer, and a read-only connection cannot change it.
//
// The page cache stays at SQLite's default (2 MB a connection). 8 MB made
// reading 10 random entries of a 10,000-entry workspace about 20 % faster,
// but only while nothing is written: a commit makes every reader connection
// drop its whole cache at its next read (WAL), and with one write per ten
// such reads the gain was gone (measured 2026-12-01). It would cost up to
// ReadConns (4) × 8 MB = 32 MB per open workspace, for good.
func readerDSN(path string) string {
	return fmt.Sprintf("%s?mode=ro&_busy_timeout=%d&_foreign_keys=on&_stmt_cache_size=%d",
		fileURI(path), busyTimeoutMS, stmtCacheSize)
}

// openPool opens the writer (creating the file), checks that WAL took,
// applies the migrations of kind, and then opens the read pool.
func openPool(ctx context.Context, path, kind string, opts Options) (*pool, error) {
	w, err := sql.Open(writerDriver(opts), writerDSN(path, opts.Synchronous))
	if err != nil {
		return nil, fmt.Errorf("open writer %s: %w", path, err)
	}
	// One connection, kept forever: all writes to the file are serialized
	// here, so SQLite never has two writers to arbitrate between.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open %s: read journal_mode: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		_ = w.Close()
		return nil, fmt.Errorf("open %s: journal_mode is %q, want wal", path, mode)
	}
	if err := migrate(ctx, w, kind); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}

	r, err := sql.Open("sqlite3", readerDSN(path))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open reader %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	if err := r.PingContext(ctx); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("open reader %s: %w", path, err)
	}
	return &pool{path: path, writer: w, reader: r}, nil
}

// close closes the readers first: the writer is the last connection, so it
// checkpoints the WAL and removes the -wal and -shm files on a clean shutdown.
func (p *pool) close() error {
	rerr := p.reader.Close()
	werr := p.writer.Close()
	if werr != nil {
		return fmt.Errorf("close writer %s: %w", p.path, werr)
	}
	if rerr != nil {
		return fmt.Errorf("close reader %s: %w", p.path, rerr)
	}
	return nil
}
