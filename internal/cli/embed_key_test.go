package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/store"
)

// MUNIN_EMBED_KEY reaches the endpoint as "Authorization: Bearer <key>"
// (here through reindex --embeddings; serve and stdio take it by the same
// embedFlags), and neither the output nor the error shows it, even when the
// endpoint quotes the header back in a failure.
func TestEmbedKeyFromEnv(t *testing.T) {
	const key = "sk-munin-cli-test-3Kp8"
	dir := newDataDir(t)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), memory.ProjectRef{Workspace: "w", Project: "p"}, memory.Write{Slug: "e", Title: "t", Content: "c", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	var failing atomic.Bool
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":"rejected %s"}`, r.Header.Get("Authorization"))
			return
		}
		ep.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("MUNIN_EMBED_KEY", key)

	failing.Store(true)
	var out string
	err, out = run(t, "reindex", "--embeddings", "--data", dir, "--embed-url", srv.URL, "--embed-model", "m")
	if err == nil || !strings.Contains(err.Error(), "500") || strings.Contains(err.Error(), key) || strings.Contains(out, key) {
		t.Fatalf("reindex --embeddings against a failing endpoint: %v\n%s\nwant a 500 that does not show the key", err, out)
	}
	failing.Store(false)
	err, out = run(t, "reindex", "--embeddings", "--data", dir, "--embed-url", srv.URL, "--embed-model", "m")
	if err != nil || !strings.Contains(out, "1 embedded") || strings.Contains(out, key) {
		t.Fatalf("reindex --embeddings: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("the endpoint was not called")
	}
	for i, a := range auths {
		if a != "Bearer "+key {
			t.Fatalf("call %d sent Authorization %q, want the key from MUNIN_EMBED_KEY as a bearer token", i+1, a)
		}
	}
}
