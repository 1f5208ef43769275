package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"munin/internal/memory"
)

// replicatedDriver is the SQLite driver of writer connections whose WAL a
// replicator (Litestream, in cluster mode) streams off the node: it turns
// SQLite's automatic checkpoints off on every connection it opens, so that
// no WAL frame is checkpointed into the database and overwritten before the
// replicator has copied it. The replicator runs the checkpoints itself.
// The setting is per connection, so it is applied in the connect hook: a
// pragma run once would be lost with a reconnected connection.
const replicatedDriver = "sqlite3-munin-replicated"

func init() {
	sql.Register(replicatedDriver, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			_, err := c.Exec("PRAGMA wal_autocheckpoint = 0", nil)
			return err
		},
	})
}

// writerDriver is the driver name for a file's writer connection: a
// workspace file of a cluster node is replicated.
func writerDriver(opts Options) string {
	if opts.Cluster != nil {
		return replicatedDriver
	}
	return "sqlite3"
}

// unacknowledged turns the failure of Cluster.AfterCommit (or BeforeCommit)
// into the answer of every write of the batch: after AfterCommit the writes
// are committed in the local file but not acknowledged, so the caller
// learns that the outcome is not known to be durable and may retry (with
// its idempotency key, a retry of a write that did survive returns the
// first result).
func unacknowledged(err error) error {
	var coded *memory.Error
	if errors.As(err, &coded) {
		return err
	}
	return &memory.Error{
		Code:    memory.CodeUnavailable,
		Message: "the write was not acknowledged: its replication was not confirmed; retry",
		Err:     fmt.Errorf("after commit: %w", err),
	}
}

// CheckIntegrity runs PRAGMA integrity_check on the SQLite file at path over
// a read-only connection of its own (cluster mode checks a restored
// workspace file before it serves it).
func CheckIntegrity(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite3", readerDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return err
	}
	if res != "ok" {
		return fmt.Errorf("integrity_check: %s", res)
	}
	return nil
}
