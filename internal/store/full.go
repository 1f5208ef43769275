package store

import (
	"errors"

	"github.com/mattn/go-sqlite3"

	"munin/internal/memory"
)

// storageError turns SQLite's "database or disk is full" into a clear,
// client-facing error. Nothing of the failed write was committed (the
// savepoint or the whole batch was rolled back), reads keep working, and the
// same write succeeds once space is freed — so the client may retry.
func storageError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return &memory.Error{
			Code:    memory.CodeUnavailable,
			Message: "storage is full: the write was not stored; retry once disk space is freed",
			Err:     err,
		}
	}
	return err
}
