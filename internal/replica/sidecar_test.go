package replica

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Rows committed and synced are in the replica: a restore holds exactly them
// and passes the integrity check, at the TXID the last sync returned.
func TestSyncThenRestore(t *testing.T) {
	bin := requireBinary(t)
	sc := startSidecar(t, Options{Binary: bin})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws1.db"))
	url := EpochURL(fileURL(t), "ws1", 2)
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, url); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := 0; i < 10; i++ {
		w.batch(t, 32, 200)
		txid, err := sc.Sync(ctx, w.path)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if txid <= last {
			t.Fatalf("batch %d: sync txid %d after %d", i, txid, last)
		}
		last = txid
	}
	out := filepath.Join(t.TempDir(), "restored.db")
	got, err := Restore(ctx, bin, url, out, RestoreOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got != last {
		t.Errorf("restored txid %d, last sync %d", got, last)
	}
	checkRows(t, out, 320, 200)
	if _, err := Restore(ctx, bin, url, out, RestoreOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("restore over an existing file: %v", err)
	}
}

// Registering again at the same URL is harmless; at another URL it is refused
// (Litestream would silently keep replicating to the old one).
func TestRegisterAgain(t *testing.T) {
	sc := startSidecar(t, Options{})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	base := fileURL(t)
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, EpochURL(base, "ws", 1)); err != nil {
		t.Fatal(err)
	}
	if err := sc.Register(ctx, w.path, EpochURL(base, "ws", 1)); err != nil {
		t.Fatalf("same URL again: %v", err)
	}
	err := sc.Register(ctx, w.path, EpochURL(base, "ws", 2))
	if !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("other URL: %v, want ErrAlreadyRegistered", err)
	}
}

// Registering a file that does not exist is refused up front.
func TestRegisterMissingFile(t *testing.T) {
	sc := startSidecar(t, Options{})
	path := filepath.Join(t.TempDir(), "missing.db")
	err := sc.Register(ctxT(t), path, EpochURL(fileURL(t), "ws", 1))
	if err == nil || !strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), path) {
		t.Fatalf("register a missing file: %v", err)
	}
}

// A sync of a file the sidecar does not know fails, naming file and socket.
func TestSyncNotRegistered(t *testing.T) {
	sc := startSidecar(t, Options{})
	path := filepath.Join(t.TempDir(), "nobody.db")
	_, err := sc.Sync(ctxT(t), path)
	if !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("err = %v, want ErrNotRegistered", err)
	}
	for _, want := range []string{path, sc.Socket(), "database not found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// When the replica cannot be written, Sync fails with the sidecar's reason and
// Lag shows every local transaction as not replicated.
func TestReplicaUnwritable(t *testing.T) {
	sc := startSidecar(t, Options{})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	blocker := filepath.Join(t.TempDir(), "blocker")
	if err := writeFile(blocker, "not a directory"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, "file://"+blocker+"/ws/0000000000000001"); err != nil {
		t.Fatal(err)
	}
	w.batch(t, 32, 100)
	_, err := sc.Sync(ctx, w.path)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), w.path) {
		t.Fatalf("sync to an unwritable replica: %v", err)
	}
	lag, err := sc.Lag(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	if lag.ReplicatedTXID != 0 || lag.Behind != lag.TXID || !lag.LastSyncAt.IsZero() ||
		!strings.Contains(lag.ReplicaError, "not a directory") {
		t.Fatalf("lag = %+v, want everything behind", lag)
	}
}

// After a sync the lag is zero; a commit not yet uploaded shows up as
// TXID > ReplicatedTXID once Lag has had Litestream read the WAL.
func TestLag(t *testing.T) {
	sc := startSidecar(t, Options{})
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	ctx := ctxT(t)
	if err := sc.Register(ctx, w.path, EpochURL(fileURL(t), "ws", 1)); err != nil {
		t.Fatal(err)
	}
	w.batch(t, 32, 100)
	synced, err := sc.Sync(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	lag, err := sc.Lag(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	if lag.TXID != synced || lag.ReplicatedTXID != synced || lag.Behind != 0 || lag.LastSyncAt.IsZero() {
		t.Fatalf("after sync %d: lag = %+v", synced, lag)
	}
	local, err := sc.TXID(ctx, w.path)
	if err != nil || local != synced {
		t.Fatalf("TXID = %d, %v; want %d", local, err, synced)
	}
	w.batch(t, 32, 100)
	lag, err = sc.Lag(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}
	if lag.TXID != synced+1 || lag.Behind != lag.TXID-lag.ReplicatedTXID {
		t.Fatalf("after a new commit: lag = %+v (synced %d)", lag, synced)
	}
}
