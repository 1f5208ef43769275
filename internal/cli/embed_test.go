package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/store"
)

// reindex --embeddings fills the missing vectors of one project (or all),
// with progress (plain lines, as the output is no terminal), and a second
// run finds nothing to do.
func TestReindexEmbeddings(t *testing.T) {
	dir := newDataDir(t)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, q := memory.ProjectRef{Workspace: "w", Project: "p"}, memory.ProjectRef{Workspace: "w", Project: "q"}
	for _, ref := range []memory.ProjectRef{p, q} {
		if _, err := st.EnsureProject(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			if _, err := st.Append(context.Background(), ref, memory.Write{Slug: fmt.Sprintf("e%d", i), Title: "t", Content: "c", Agent: "a"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)

	if err, _ := run(t, "reindex", "--embeddings", "--data", dir, "w/p"); err == nil || !strings.Contains(err.Error(), "--embed-url") {
		t.Fatalf("without a URL: %v", err)
	}
	err, out := run(t, "reindex", "--embeddings", "--data", dir, "--embed-url", ep.URL, "--embed-model", "m", "w/p")
	if err != nil || !strings.Contains(out, "w/p: 40 missing, 40 embedded with m") || !strings.Contains(out, "0 left") ||
		!strings.Contains(out, "w/p: 40/40 vectors (100%), done in") || strings.Contains(out, "\r") {
		t.Fatalf("reindex --embeddings w/p: %v\n%s", err, out)
	}
	if ep.Texts() != 40 {
		t.Fatalf("endpoint got %d texts, want 40 (w/p only)", ep.Texts())
	}
	t.Setenv("MUNIN_EMBED_URL", ep.URL)
	t.Setenv("MUNIN_EMBED_MODEL", "m")
	err, out = run(t, "reindex", "--embeddings", "--data", dir)
	if err != nil || !strings.Contains(out, "w/p: 0 missing, 0 embedded") || !strings.Contains(out, "w/q: 40 missing, 40 embedded") {
		t.Fatalf("reindex --embeddings (all, from env): %v\n%s", err, out)
	}
	ep.SetMode(embedtest.Status500)
	t.Setenv("MUNIN_EMBED_MODEL", "other")
	if err, _ := run(t, "reindex", "--embeddings", "--data", dir, "w/p"); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("failing endpoint: %v", err)
	}
	// A key the endpoint refuses fails the fill, naming the key, rather
	// than skipping every entry as refused and reporting success.
	ep.Fail(http.StatusUnauthorized)
	if err, out := run(t, "reindex", "--embeddings", "--data", dir, "w/p"); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "MUNIN_EMBED_KEY") {
		t.Fatalf("endpoint refusing the key: %v\n%s", err, out)
	}
}
