//go:build unix

package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"munin/internal/config"
)

// TestDataFilesArePrivate: with PrivateFiles in effect, as main sets it, the
// data directory and every database file are for the owner only.
func TestDataFilesArePrivate(t *testing.T) {
	old := PrivateFiles()
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "data")
	a, err := Open(Config{IndexPersistNap: testPersistNap, Config: config.Config{Storage: config.Storage{DataDir: dir}}, Exclusive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Svc.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{dir}
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	if len(paths) < 3 {
		t.Fatalf("expected the control file and a workspace file in %s, got %v", dir, paths)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v: readable by others", p, perm)
		}
	}
}
