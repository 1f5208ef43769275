package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// ack is one acknowledged write.
type ack struct {
	slug    string
	version int
	content string
}

// TestBackupWhileWriting: 16 writers append without pause while the backup
// runs. Every version acknowledged before the backup started is in the copy
// with its content, the copy passes integrity_check, its versions are
// gapless, and it opens as a data directory.
func TestBackupWhileWriting(t *testing.T) {
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	s := openAt(t, dir)
	ref := ensure(t, s, "team", "alpha")
	other := ensure(t, s, "other", "beta")
	put(t, s, other, "note", "another workspace file")

	var (
		mu   sync.Mutex
		acks []ack
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				slug := fmt.Sprintf("agent-%d/note-%d", g, i%5)
				content := fmt.Sprintf("agent %d write %d %s", g, i, strings.Repeat("x", i%300))
				res, err := s.Append(context.Background(), ref, memory.Write{Slug: slug, Content: content, Agent: "w"})
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				mu.Lock()
				acks = append(acks, ack{slug, res.Version, content})
				mu.Unlock()
			}
		}()
	}
	// Let the writers get going, then note what was acknowledged before the
	// backup starts. Failing writers end the wait with their own error.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 500 {
			break
		}
		if t.Failed() || time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("only %d writes acknowledged before the backup could start", n)
		}
	}
	mu.Lock()
	before := len(acks)
	mu.Unlock()
	rep, err := Backup(context.Background(), dir, dest, BackupOptions{StepPages: 8})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	mu.Lock()
	total := len(acks)
	mu.Unlock()
	t.Logf("backup of %d files in %v; %d writes acknowledged before it, %d in all", len(rep.Files), rep.Duration, before, total)
	if len(rep.Files) != 3 {
		t.Fatalf("backed-up files = %+v, want _control.db, other.db, team.db", rep.Files)
	}

	// The copy, checked independently of Backup's own verification.
	for _, name := range []string{"_control.db", "team.db", "other.db"} {
		var res string
		if err := rawDB(t, filepath.Join(dest, name)).QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
			t.Fatalf("integrity_check %s = %q, %v", name, res, err)
		}
	}
	var gaps int
	if err := rawDB(t, filepath.Join(dest, "team.db")).QueryRow(`SELECT count(*) FROM (
		SELECT slug FROM versions GROUP BY project, slug HAVING min(version) != 1 OR max(version) != count(*))`).Scan(&gaps); err != nil {
		t.Fatal(err)
	}
	if gaps != 0 {
		t.Fatalf("%d slugs in the copy have gaps or duplicates", gaps)
	}

	cp := openAt(t, dest)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acks[:before] {
		v, _, err := cp.Get(context.Background(), ref, a.slug, a.version)
		if err != nil {
			t.Fatalf("acknowledged %s v%d is not in the copy: %v", a.slug, a.version, err)
		}
		if v.Content != a.content {
			t.Fatalf("%s v%d in the copy = %q, want %q", a.slug, a.version, v.Content, a.content)
		}
	}
	if v, _, err := cp.Get(context.Background(), other, "note", 0); err != nil || v.Content != "another workspace file" {
		t.Fatalf("other workspace in the copy: %+v, %v", v, err)
	}
	// The copy takes writes like any data directory.
	put(t, cp, ref, "after-restore", "works")
}

// A backup of a data directory no server has open (clean shutdown, no -wal
// file) works too, and the report counts the versions.
func TestBackupOfClosedDataDir(t *testing.T) {
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "b")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ensure(t, s, "team", "alpha")
	for i := range 10 {
		put(t, s, ref, fmt.Sprintf("n-%d", i), "text")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	rep, err := Backup(context.Background(), dir, dest, BackupOptions{Progress: func(f BackupFile) { seen = append(seen, f.Name) }})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if got := strings.Join(seen, ","); got != "_control.db,team.db" {
		t.Fatalf("progress saw %s", got)
	}
	if f := rep.Files[1]; f.Versions != 10 || f.Pages == 0 || f.Bytes == 0 {
		t.Fatalf("team.db report = %+v, want 10 versions", f)
	}
}

func TestBackupRefusesNonEmptyDestination(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	ensure(t, s, "team", "alpha")
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "keep.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Backup(context.Background(), dir, dest, BackupOptions{})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("backup into a non-empty directory: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "keep.txt")); string(b) != "mine" {
		t.Fatal("the destination's file was touched")
	}
	if _, err := Backup(context.Background(), t.TempDir(), filepath.Join(dest, "x"), BackupOptions{}); err == nil {
		t.Fatal("backup of a directory without _control.db succeeded")
	}
}

// TestFailedBackupLeavesNothing: a backup that fails half-way (here: a
// workspace file is gone) leaves no partial data directory that could be
// served, and the same destination can be used again.
func TestFailedBackupLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, ensure(t, s, "team", "alpha"), "note", "text")
	put(t, s, ensure(t, s, "zeta", "beta"), "note", "text")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "zeta.db"), filepath.Join(dir, "zeta.db.away")); err != nil {
		t.Fatal(err)
	}
	newDest := filepath.Join(t.TempDir(), "new")
	emptyDest := t.TempDir()
	for _, dest := range []string{newDest, emptyDest} {
		var copied []string
		_, err := Backup(context.Background(), dir, dest, BackupOptions{Progress: func(f BackupFile) { copied = append(copied, f.Name) }})
		if err == nil || !strings.Contains(err.Error(), "zeta.db") {
			t.Fatalf("backup without zeta.db: %v, want an error naming it", err)
		}
		if len(copied) < 2 {
			t.Fatalf("the backup failed before copying anything (%v); the test needs a partial copy", copied)
		}
		ents, _ := os.ReadDir(dest)
		if len(ents) != 0 {
			t.Errorf("failed backup left %d entries in %s", len(ents), dest)
		}
	}
	if _, err := os.Stat(newDest); !os.IsNotExist(err) {
		t.Errorf("the destination the failed backup created still exists: %v", err)
	}
	if err := os.Rename(filepath.Join(dir, "zeta.db.away"), filepath.Join(dir, "zeta.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(context.Background(), dir, emptyDest, BackupOptions{}); err != nil {
		t.Fatalf("backup into the same destination after the failure: %v", err)
	}
}
