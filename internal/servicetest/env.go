// Package servicetest builds the real stack — SQLite store, bleve registry,
// service — in a temporary directory for tests of the layers above.
package servicetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// Env is a running stack over real files in t.TempDir().
type Env struct {
	Dir   string
	Store *store.Store
	Index *search.Registry
	Svc   *service.Service
}

// New opens a store in a temp dir and builds the registry and service over it;
// everything is closed when the test ends.
func New(t testing.TB, opts service.Options) *Env {
	t.Helper()
	return build(t, opts, search.Options{})
}

// build is New with the registry's options; its meaning path, if any, takes
// its vectors from the store.
func build(t testing.TB, opts service.Options, sopts search.Options) *Env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if sopts.Meaning.Embedder != nil {
		sopts.Meaning.Vectors = scanVectors{st: st, emb: sopts.Meaning.Embedder}
	}
	reg := search.NewRegistry(st, sopts)
	if opts.OAuth != nil && opts.OAuth.Store == nil { // OAuth on: its data in this store
		o := *opts.OAuth
		o.Store = st
		opts.OAuth = &o
	}
	svc := service.New(st, reg, opts)
	if os.Getenv(RemoteEnv) == "1" {
		svc.Close()
		svc = throughRemote(t, st, reg, opts)
	}
	t.Cleanup(func() {
		svc.Close()
		reg.Close()
		st.Close()
	})
	return &Env{Dir: dir, Store: st, Index: reg, Svc: svc}
}

// Key creates workspace/project if new and a key for agent with role; it
// returns the token and the caller authentication yields for it alone.
func (e *Env) Key(t testing.TB, workspace, project, agent string, role memory.Role) (string, memory.Caller) {
	t.Helper()
	ref := memory.ProjectRef{Workspace: workspace, Project: project}
	token, _, err := e.Svc.CreateKey(context.Background(), ref, agent, role)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	key, err := e.Svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("authenticate new key: %v", err)
	}
	return token, key
}

// Caller authenticates tokens as one key list, as an Authorization header
// "Bearer a,b" carries it: one agent reaching several projects.
func (e *Env) Caller(t testing.TB, tokens ...string) memory.Caller {
	t.Helper()
	c, err := e.Svc.Authenticate(context.Background(), strings.Join(tokens, ","))
	if err != nil {
		t.Fatalf("authenticate %d keys: %v", len(tokens), err)
	}
	return c
}

// ServerAdmin creates a server-admin key for agent and returns its token and
// the caller authentication yields for it.
func (e *Env) ServerAdmin(t testing.TB, agent string) (string, memory.Caller) {
	t.Helper()
	token, _, err := e.Svc.CreateServerAdminKey(context.Background(), agent)
	if err != nil {
		t.Fatalf("create server-admin key: %v", err)
	}
	return token, e.Caller(t, token)
}

// FutureHour is the start of the hour two days from now. A test clock set
// in it stands still without a fixed date (which fails once the real time
// passes it), and keeps the real time stamps the store writes (the audit
// log's, which the write budget counts) out of the hours the test looks at.
func FutureHour() time.Time { return time.Now().UTC().Add(48 * time.Hour).Truncate(time.Hour) }
