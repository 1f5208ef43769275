package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Takeover of a workspace that never had a replica: "empty" is reported as
// such, for a missing location and for an existing empty one, and no output
// file is left.
func TestRestoreEmpty(t *testing.T) {
	bin := requireBinary(t)
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "empty", "0000000000000001"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"missing", "empty"} {
		t.Run(ws, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.db")
			_, err := Restore(ctxT(t), bin, EpochURL("file://"+base, ws, 1), out, RestoreOptions{})
			if !errors.Is(err, ErrReplicaEmpty) {
				t.Fatalf("err = %v, want ErrReplicaEmpty", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("output left behind: %v", err)
			}
		})
	}
}

// Restore to a given TXID holds exactly the batches synced up to it; a TXID
// beyond the replica is reported distinctly and leaves nothing.
func TestRestoreToTXID(t *testing.T) {
	bin := requireBinary(t)
	sc := startSidecar(t, Options{Binary: bin})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	url := EpochURL(fileURL(t), "ws", 3)
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, url); err != nil {
		t.Fatal(err)
	}
	var txids []uint64
	for i := 0; i < 6; i++ {
		w.batch(t, 32, 100)
		txid, err := sc.Sync(ctx, w.path)
		if err != nil {
			t.Fatal(err)
		}
		txids = append(txids, txid)
	}
	for _, k := range []int{0, 2, 5} {
		out := filepath.Join(t.TempDir(), "out.db")
		got, err := Restore(ctx, bin, url, out, RestoreOptions{TXID: txids[k]})
		if err != nil {
			t.Fatalf("restore to txid %d: %v", txids[k], err)
		}
		if got != txids[k] {
			t.Fatalf("restored to %d, asked for %d", got, txids[k])
		}
		checkRows(t, out, (k+1)*32, 100)
	}
	out := filepath.Join(t.TempDir(), "out.db")
	_, err := Restore(ctx, bin, url, out, RestoreOptions{TXID: txids[5] + 100})
	if !errors.Is(err, ErrTXIDNotAvailable) {
		t.Fatalf("txid beyond the replica: %v, want ErrTXIDNotAvailable", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output left behind: %v", err)
	}
}

// A restore that fails for another reason is retried a bounded number of
// times and leaves nothing behind.
func TestRestoreFailsCleanly(t *testing.T) {
	bin := requireBinary(t)
	out := filepath.Join(t.TempDir(), "out.db")
	_, err := Restore(ctxT(t), bin, "nosuchscheme://x/y", out, RestoreOptions{Attempts: 2, Logger: testLogger(t)})
	if err == nil || errors.Is(err, ErrReplicaEmpty) {
		t.Fatalf("err = %v, want a failure", err)
	}
	t.Log(err)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output left behind: %v", err)
	}
}

// pruneL0 deletes Litestream's first local L0 files, as its L0 retention does
// five minutes after they were compacted.
func pruneL0(t *testing.T, dbPath string, n int) {
	t.Helper()
	for txid := 1; txid <= n; txid++ {
		p := filepath.Join(MetaDir(dbPath), "ltx", "0", fmt.Sprintf("%016x-%016x.ltx", txid, txid))
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// A new epoch: StartEpoch at the next epoch's URL gives the new location a
// full copy of the file (a restore from it holds every row, not just those
// written since) starting at TXID 1, even after Litestream pruned its local
// history, and the old location is not written any more.
func TestNewEpoch(t *testing.T) {
	bin := requireBinary(t)
	sc := startSidecar(t, Options{Binary: bin})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	base := fileURL(t)
	old, next := EpochURL(base, "ws", 4), EpochURL(base, "ws", 9)
	ctx := ctxT(t)
	if err := sc.StartEpoch(ctx, w.path, old); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		w.batch(t, 32, 100)
		if _, err := sc.Sync(ctx, w.path); err != nil {
			t.Fatal(err)
		}
	}
	oldTXID, err := sc.Unregister(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := sc.Unregister(ctx, w.path); err != nil || again != 0 {
		t.Fatalf("second unregister: %d, %v", again, err)
	}
	oldDir := filepath.Join(base[len("file://"):], "ws", "0000000000000004")
	oldFiles := listFiles(t, oldDir)
	pruneL0(t, w.path, 2)

	if err := sc.StartEpoch(ctx, w.path, next); err != nil {
		t.Fatal(err)
	}
	w.batch(t, 32, 100)
	newTXID, err := sc.Sync(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	if newTXID > 2 {
		t.Fatalf("new epoch at txid %d after one batch; want a fresh start", newTXID)
	}
	out := filepath.Join(t.TempDir(), "next.db")
	got, err := Restore(ctx, bin, next, out, RestoreOptions{})
	if err != nil || got != newTXID {
		t.Fatalf("restore new epoch: %d, %v (synced %d)", got, err, newTXID)
	}
	checkRows(t, out, 4*32, 100)
	out = filepath.Join(t.TempDir(), "old.db")
	if got, err := Restore(ctx, bin, old, out, RestoreOptions{}); err != nil || got != oldTXID {
		t.Fatalf("restore old epoch: %d, %v (want %d)", got, err, oldTXID)
	}
	checkRows(t, out, 3*32, 100)
	if now := listFiles(t, oldDir); !equal(now, oldFiles) {
		t.Fatalf("old epoch written after unregister: %v → %v", oldFiles, now)
	}
}

// Pins the Litestream behaviour StartEpoch works around: a plain Register at
// an empty location, with local history pruned, cannot sync. If this starts
// passing, a newer Litestream snapshots by itself and the reset is moot.
func TestRegisterNewLocationWithPrunedHistory(t *testing.T) {
	sc := startSidecar(t, Options{})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	base := fileURL(t)
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, EpochURL(base, "ws", 1)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		w.batch(t, 32, 100)
		if _, err := sc.Sync(ctx, w.path); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sc.Unregister(ctx, w.path); err != nil {
		t.Fatal(err)
	}
	pruneL0(t, w.path, 2)
	if err := sc.Register(ctx, w.path, EpochURL(base, "ws", 2)); err != nil {
		t.Fatal(err)
	}
	w.batch(t, 32, 100)
	_, err := sc.Sync(ctx, w.path)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("sync = %v; Litestream's behaviour changed (see StartEpoch)", err)
	}
	// Let the sidecar stop quickly: no final upload can succeed.
	if err := os.RemoveAll(MetaDir(w.path)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _ = sc.Unregister(short, w.path)
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
