package owner

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/store"
)

// fakeCluster is an in-memory cluster: owners by workspace, epochs counted
// up, and this node's claims.
type fakeCluster struct {
	self string
	live []string

	mu       sync.Mutex
	owners   map[string]string
	epochs   map[string]int64
	recorded map[string]int64
	next     int64
	claims   map[string]*fakeClaim
	campaign atomic.Int64 // campaigns started
	cut      atomic.Bool  // the node's lease is gone
}

func newFakeCluster(self string, live ...string) *fakeCluster {
	return &fakeCluster{self: self, live: live, owners: map[string]string{}, epochs: map[string]int64{},
		recorded: map[string]int64{}, next: 10, claims: map[string]*fakeClaim{}}
}

func (c *fakeCluster) Self() string   { return c.self }
func (c *fakeCluster) Valid() bool    { return !c.cut.Load() }
func (c *fakeCluster) Live() []string { return slices.Clone(c.live) }

func (c *fakeCluster) Owner(ws string) (string, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.owners[ws]
	return u, c.epochs[ws], ok
}

// setOwner makes another node the owner, as a watch would report it.
func (c *fakeCluster) setOwner(ws, url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	c.owners[ws], c.epochs[ws] = url, c.next
}

func (c *fakeCluster) Campaign(ctx context.Context, ws string) (Claim, error) {
	c.campaign.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.owners[ws]; taken {
		return nil, errors.New("taken")
	}
	c.next++
	cl := &fakeClaim{c: c, ws: ws, epoch: c.next, lost: make(chan struct{})}
	cl.valid.Store(true)
	c.owners[ws], c.epochs[ws], c.claims[ws] = c.self, c.next, cl
	return cl, nil
}

func (c *fakeCluster) PreviousEpoch(ctx context.Context, ws string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recorded[ws], nil
}

func (c *fakeCluster) claim(ws string) *fakeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[ws]
}

type fakeClaim struct {
	c     *fakeCluster
	ws    string
	epoch int64
	valid atomic.Bool
	lost  chan struct{}
	once  sync.Once
}

func (f *fakeClaim) Epoch() int64          { return f.epoch }
func (f *fakeClaim) Valid() bool           { return f.valid.Load() }
func (f *fakeClaim) Lost() <-chan struct{} { return f.lost }

// lose ends the claim as a lease expiry would: invalid first, then lost.
func (f *fakeClaim) lose() {
	f.valid.Store(false)
	f.once.Do(func() { close(f.lost) })
}

func (f *fakeClaim) RecordEpoch(ctx context.Context) error {
	if !f.Valid() {
		return errors.New("not owner")
	}
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	f.c.recorded[f.ws] = f.epoch
	return nil
}

func (f *fakeClaim) Resign(ctx context.Context) error { f.lose(); return nil }

// fakeReplicator keeps "replicas" as copies of the files in a directory:
// Sync copies the file after a checkpoint-free read of it (the test closes
// the workspace first where it needs a consistent copy).
type fakeReplicator struct {
	dir string

	mu         sync.Mutex
	registered map[string]string // path -> replica URL
	syncs      atomic.Int64
	failSync   atomic.Bool
	// during, when set, runs inside every Sync, as if while it waits for
	// the replica.
	during   atomic.Pointer[func()]
	restored []string
}

func (r *fakeReplicator) EpochURL(ws string, epoch int64) string {
	return filepath.Join(r.dir, ws, string(rune('a'+epoch%26)))
}

func (r *fakeReplicator) Register(ctx context.Context, path, url string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.registered == nil {
		r.registered = map[string]string{}
	}
	r.registered[path] = url
	return nil
}

func (r *fakeReplicator) Resume(ctx context.Context, path, url string) error {
	return r.Register(ctx, path, url)
}

func (r *fakeReplicator) Sync(ctx context.Context, path string) error {
	r.syncs.Add(1)
	if f := r.during.Load(); f != nil {
		(*f)()
	}
	if r.failSync.Load() {
		return errors.New("replica unreachable")
	}
	return nil
}

func (r *fakeReplicator) Unregister(ctx context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.registered, path)
	return nil
}

// Restore copies the file kept at url (if any) to out.
func (r *fakeReplicator) Restore(ctx context.Context, url, out string) (bool, error) {
	r.mu.Lock()
	r.restored = append(r.restored, url)
	r.mu.Unlock()
	src, err := os.Open(filepath.Join(url, "db"))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return false, err
	}
	return false, dst.Close()
}

// node is a Manager with a real store wired to its hooks.
type node struct {
	m  *Manager
	st *store.Store
	c  *fakeCluster
	r  *fakeReplicator
}

func newNode(t *testing.T, c *fakeCluster, opts Options) *node {
	t.Helper()
	r := &fakeReplicator{dir: t.TempDir()}
	opts.DataDir = t.TempDir()
	if opts.Rank == nil {
		opts.Rank = func(ws string, nodes []string) []string { return nodes }
	}
	m := New(c, r, opts)
	st, err := store.Open(opts.DataDir, store.Options{Cluster: everyProject{m}})
	if err != nil {
		t.Fatal(err)
	}
	m.SetStore(st)
	t.Cleanup(func() {
		m.Close()
		_ = st.Close()
	})
	return &node{m: m, st: st, c: c, r: r}
}

// everyProject is the Manager as the store's Cluster, with every project
// existing (the application asks the cluster's control data).
type everyProject struct{ *Manager }

func (everyProject) ProjectExists(context.Context, memory.ProjectRef) error { return nil }
