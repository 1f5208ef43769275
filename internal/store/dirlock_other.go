//go:build !unix

package store

import (
	"errors"
	"os"
)

// errLocked is never returned here: without flock the lock is advisory
// only (Munin's supported platforms are Unix; this keeps others building).
var errLocked = errors.New("locked")

func lockFileExclusive(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
