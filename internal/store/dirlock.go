package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"munin/internal/memory"
)

// lockFile is the file a serving process locks in its data directory.
const lockFile = "munin.lock"

// DirLock is one process's exclusive claim on a data directory. Only one process
// at a time may serve from it: otherwise a workspace file would have two writers
// (invariant 1, docs/architecture.md#invariant-1-one-writer-per-workspace) and
// each process's in-memory search index would miss the other's writes
// (invariant 3, docs/architecture.md#invariant-3-read-your-writes). Read-only
// commands (backup, export) and key management, which touches only the control
// database whose changes a server notices, do not take it.
type DirLock struct {
	f *os.File
}

// LockDir claims dir for this process, creating it if needed. If another
// process holds it, the error is CodeConflict and names that process. The
// kernel drops the lock when the process ends, kill -9 included, so a
// crashed server never leaves a stale lock behind.
func LockDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := lockFileExclusive(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errLocked) {
			by := ""
			if pid := string(bytes.TrimSpace(holder)); pid != "" {
				by = " (pid " + pid + ")"
			}
			return nil, memory.Errorf(memory.CodeConflict,
				"data directory %s is in use by another munin process%s; only one process may serve, import or reindex from it at a time", dir, by)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	// The pid is only for the message above; the lock itself is the flock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the claim. The file stays: removing it could let a
// second process lock a new file while a third still holds the old one.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
