//go:build cluster

package clustertest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeReader serves entries from a map: the verifier's cases that a real
// server cannot be made to show (a gap, a wrong history).
type fakeReader struct {
	entries map[slugRef]map[int]string
	hist    map[slugRef][]int // overrides the history page
}

func (f fakeReader) get(_ context.Context, project, slug string, version int) (string, int, int, bool, error) {
	vs := f.entries[slugRef{project, slug}]
	latest := 0
	for v := range vs {
		latest = max(latest, v)
	}
	if version == 0 {
		version = latest
	}
	c, ok := vs[version]
	if !ok {
		return "", 0, 0, false, nil
	}
	return c, version, latest, true, nil
}

func (f fakeReader) history(_ context.Context, project, slug string) ([]int, error) {
	ref := slugRef{project, slug}
	if h, ok := f.hist[ref]; ok {
		return h, nil
	}
	_, _, latest, _, _ := f.get(context.Background(), project, slug, 0)
	return descending(latest, min(latest, historyPage)), nil
}

func TestVerifyAPI(t *testing.T) {
	a := slugRef{"w/p", "a/s0"}
	b := slugRef{"w/p", "b/s0"}
	long := slugRef{"w/p", "lang"}
	r := fakeReader{entries: map[slugRef]map[int]string{
		a:    {1: "eins", 2: "zwei", 3: "drei"},
		b:    {1: "eins", 3: "drei"}, // v2 missing: a gap
		long: {},
	}, hist: map[slugRef][]int{}}
	var longAcks []ack
	for v := 1; v <= 250; v++ { // more than one history page
		r.entries[long][v] = fmt.Sprint(v)
		longAcks = append(longAcks, mkAck("w/p", "lang", v, fmt.Sprint(v), "l", 0, time.Duration(v)))
	}
	good := append([]ack{mkAck("w/p", "a/s0", 1, "eins", "a", 0, 0), mkAck("w/p", "a/s0", 3, "drei", "a", 1, 2)}, longAcks...)
	if v := verifyAPI(context.Background(), r, good, 3); v.lost != 0 || v.gaps != 0 || v.entries != 2 || v.versions != 253 || v.acks != 252 {
		t.Fatalf("good acks: %+v", v)
	}
	cases := []struct {
		name      string
		acks      []ack
		hist      []int
		lost, gap int
		says      string
	}{
		{"other content", []ack{mkAck("w/p", "a/s0", 2, "anders", "a", 0, 0)}, nil, 1, 0, `gelesen "zwei"`},
		{"acknowledged twice", []ack{mkAck("w/p", "a/s0", 2, "zwei", "a", 0, 0), mkAck("w/p", "a/s0", 2, "auch zwei", "a", 1, 1)}, nil, 1, 0, `bestätigt war "auch zwei"`},
		{"acknowledged twice, the lost one first", []ack{mkAck("w/p", "a/s0", 2, "auch zwei", "a", 1, 0), mkAck("w/p", "a/s0", 2, "zwei", "a", 0, 1)}, nil, 1, 0, `bestätigt war "auch zwei"`},
		{"beyond the latest", []ack{mkAck("w/p", "a/s0", 4, "vier", "a", 2, 0)}, nil, 1, 0, "neueste Fassung ist v3"},
		{"entry missing", []ack{mkAck("w/p", "c/s0", 1, "x", "c", 0, 0), mkAck("w/p", "c/s0", 2, "y", "c", 0, 1)}, nil, 2, 0, "nicht lesbar"},
		{"gap", []ack{mkAck("w/p", "b/s0", 1, "eins", "b", 0, 0)}, nil, 0, 1, "v2 fehlt"},
		{"history with a hole", []ack{mkAck("w/p", "a/s0", 1, "eins", "a", 0, 0)}, []int{3, 1}, 0, 1, "history zeigt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			delete(r.hist, a)
			if c.hist != nil {
				r.hist[a] = c.hist
			}
			v := verifyAPI(context.Background(), r, c.acks, 2)
			if v.lost != c.lost || v.gaps != c.gap || len(v.problems) == 0 || !strings.Contains(strings.Join(v.problems, "\n"), c.says) {
				t.Fatalf("lost %d gaps %d (want %d, %d), problems %q (want one saying %q)", v.lost, v.gaps, c.lost, c.gap, v.problems, c.says)
			}
		})
	}
}

// writeFile makes a workspace-shaped SQLite file with the given versions of
// project p.
func writeFile(t *testing.T, path string, versions map[string][]int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA journal_mode=WAL; CREATE TABLE versions (project TEXT, slug TEXT, version INTEGER, content TEXT)"); err != nil {
		t.Fatal(err)
	}
	for slug, vs := range versions {
		for _, v := range vs {
			if _, err := db.Exec("INSERT INTO versions VALUES ('p', ?, ?, ?)", slug, v, fmt.Sprintf("%s v%d", slug, v)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A file is read with its integrity; acks are compared against it: a
// missing version is a gap, an ack of it a loss, other content a loss.
func TestCompareStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	writeFile(t, path, map[string][]int{"a/s0": {1, 2, 3}, "b/s0": {1, 3}})
	s, integrity, err := readStored(path, "w")
	if err != nil || integrity != "ok" {
		t.Fatalf("readStored: %q %v", integrity, err)
	}
	if len(s) != 2 || s[slugRef{"w/p", "a/s0"}][2] != "a/s0 v2" {
		t.Fatalf("stored %v", s)
	}
	v := &verdict{}
	compareStored(s, []ack{mkAck("w/p", "a/s0", 3, "a/s0 v3", "a", 0, 0)}, v)
	if v.lost != 0 || v.gaps != 1 || v.entries != 2 || v.versions != 5 || v.acks != 1 {
		t.Fatalf("one gap (b/s0 v2), no loss: %+v", v)
	}
	v = &verdict{}
	compareStored(s, []ack{mkAck("w/p", "b/s0", 2, "b/s0 v2", "b", 0, 0), mkAck("w/p", "a/s0", 1, "anders", "a", 0, 0),
		mkAck("w/p", "a/s0", 9, "neun", "a", 0, 0)}, v)
	if v.lost != 3 {
		t.Fatalf("three losses: %+v", v)
	}
	if _, _, err := readStored(filepath.Join(t.TempDir(), "none.db"), "w"); err == nil {
		t.Fatal("readStored of a missing file: no error")
	}
}

// The replica of a workspace's latest epoch is found among the epoch
// directories, restored with the real litestream (full integrity check)
// and read back: the rows written while litestream replicated are there.
func TestRestoreLatestEpoch(t *testing.T) {
	litestream := findLitestream(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "replica")
	if err := os.MkdirAll(epochDir(base, "w", 3), 0o755); err != nil { // an older epoch, empty
		t.Fatal(err)
	}
	db := filepath.Join(dir, "w.db")
	writeFile(t, db, map[string][]int{"a/s0": {1, 2}})
	p, err := startProc(t, filepath.Join(dir, "ls.log"), nil, litestream, "replicate", db, "file://"+epochDir(base, "w", 0x1c))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite3", "file:"+db+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec("INSERT INTO versions VALUES ('p', 'a/s0', 3, 'a/s0 v3')"); err != nil {
		t.Fatal(err)
	}
	// litestream ships the WAL about once a second: restore until v3 is
	// there, at most 30 s.
	out := filepath.Join(dir, "restored.db")
	var s stored
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		os.Remove(out)
		err := restore(context.Background(), litestream, epochDir(base, "w", 0x1c), out)
		if err == nil {
			var integrity string
			s, integrity, err = readStored(out, "w")
			if err == nil && integrity != "ok" {
				t.Fatalf("integrity of the restore: %q", integrity)
			}
		}
		if err == nil && len(s[slugRef{"w/p", "a/s0"}]) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restore with v3 after 30 s: %v, %v\n%s", err, s, p.logTail(2000))
		}
	}
	v := &verdict{}
	compareStored(s, []ack{mkAck("w/p", "a/s0", 3, "a/s0 v3", "a", 0, 0)}, v)
	if v.lost != 0 || v.gaps != 0 {
		t.Fatalf("restored: %+v", v)
	}
	if epoch, err := latestEpoch(base, "w"); err != nil || epoch != 0x1c {
		t.Fatalf("latestEpoch: %x %v, want 1c", epoch, err)
	}
	if err := restore(context.Background(), litestream, epochDir(base, "w", 3), filepath.Join(dir, "empty.db")); err == nil {
		t.Fatal("restore of an empty epoch: no error")
	}
	if _, err := latestEpoch(base, "nichts"); err == nil {
		t.Fatal("latestEpoch of a workspace without replica: no error")
	}
}

// The REST reader asks the next node when one answers unavailable or not
// at all, keeps 404 not_found as an answer, and gives up after its retries.
func TestRESTReaderFallsOver(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	count := func(name string) {
		mu.Lock()
		asked[name]++
		mu.Unlock()
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count("down")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"this node lost its connection to the cluster"}}`))
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count("up")
		if r.Header.Get("Authorization") != "Bearer k" || r.URL.Query().Get("project") != "w/p" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/v1/entries/a/s0":
			w.Write([]byte(`{"content":"drei","version":3,"latest_version":3}`))
		case "/api/v1/history/a/s0":
			w.Write([]byte(`{"versions":[{"version":3},{"version":2},{"version":1}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"no such entry"}}`))
		}
	}))
	defer up.Close()
	gone := "http://" + closedAddr(t)

	r := newRESTReader([]string{down.URL, gone, up.URL}, map[string]string{"w/p": "k"})
	ctx := context.Background()
	for range 5 { // whichever node an entry starts at
		c, v, latest, found, err := r.get(ctx, "w/p", "a/s0", 0)
		if err != nil || !found || c != "drei" || v != 3 || latest != 3 {
			t.Fatalf("get: %q v%d latest %d found %v: %v", c, v, latest, found, err)
		}
	}
	if h, err := r.history(ctx, "w/p", "a/s0"); err != nil || !slices.Equal(h, []int{3, 2, 1}) {
		t.Fatalf("history: %v %v", h, err)
	}
	if _, _, _, found, err := r.get(ctx, "w/p", "b/s0", 0); found || err != nil {
		t.Fatalf("missing entry: found %v, %v", found, err)
	}
	if asked["down"] == 0 || asked["up"] == 0 {
		t.Fatalf("asked %v: both nodes should have been asked", asked)
	}
	r = newRESTReader([]string{down.URL, gone}, map[string]string{"w/p": "k"})
	r.retries = 3
	if _, _, _, _, err := r.get(ctx, "w/p", "a/s0", 0); err == nil {
		t.Fatal("no node answers: no error")
	}
}

// closedAddr is a 127.0.0.1 address nobody listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
