package portable

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"munin/internal/embed"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/store"
)

// vectorModel is the model the tests below embed with.
const vectorModel = "m"

// vectorsOf returns the vectors of ref's live entries, by slug.
func vectorsOf(t testing.TB, s *store.Store, ref memory.ProjectRef) []memory.Vector {
	t.Helper()
	vs, err := s.Vectors(ctx, ref, vectorModel)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(vs, func(a, b memory.Vector) int { return cmp.Compare(a.Slug, b.Slug) })
	return vs
}

// backlog is the count of ref's live entries without a vector.
func backlog(t testing.TB, s *store.Store, ref memory.ProjectRef) int {
	t.Helper()
	n, err := s.VectorBacklog(ctx, ref, vectorModel)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sameVectors(a, b []memory.Vector) bool {
	return slices.EqualFunc(a, b, func(x, y memory.Vector) bool {
		return x.Slug == y.Slug && x.Version == y.Version && slices.Equal(x.Values, y.Values)
	})
}

// exportFields are the members of an export line (docs/backup.md#export).
var exportFields = []string{"slug", "version", "title", "content", "tags", "agent", "created_at", "deleted"}

// As docs/search.md#meaning-search says: munin backup copies the vectors with the
// files; munin export leaves them out (the same bytes as before any vector
// was stored, and no member beyond a version's fields); after munin import
// every imported entry is missing its vector, and both the server's worker
// (in the background, from its start) and reindex --embeddings fill them,
// the same vectors as the source's.
func TestVectorsInBackupNotInExport(t *testing.T) {
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	client, err := embed.NewClient(embed.ClientOptions{URL: ep.URL, Model: vectorModel})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	ref := ensure(t, s, "acme", "backend")
	fill(t, s, ref)
	before := export(t, s, ref)
	live := backlog(t, s, ref)
	if live == 0 {
		t.Fatal("no live entries to embed")
	}
	fw := embed.NewWorker(s, client, embed.Options{})
	defer fw.Close()
	if n, err := fw.Fill(ctx, ref.Workspace, nil); err != nil || n != live {
		t.Fatalf("embedded %d, %v; want %d vectors", n, err, live)
	}
	want := vectorsOf(t, s, ref)
	if len(want) != live || backlog(t, s, ref) != 0 {
		t.Fatalf("%d vectors for %d live entries, backlog %d", len(want), live, backlog(t, s, ref))
	}

	// Backup: the copy holds every vector, and the copy's worker has nothing to do.
	dest := filepath.Join(t.TempDir(), "copy")
	if _, err := Backup(ctx, dir, dest, io.Discard); err != nil {
		t.Fatal(err)
	}
	cp := openStore(t, dest)
	if got := vectorsOf(t, cp, ref); !sameVectors(got, want) || backlog(t, cp, ref) != 0 {
		t.Fatalf("the backup holds %d vectors (backlog %d), want the source's %d", len(got), backlog(t, cp, ref), len(want))
	}

	// Export: no vectors.
	exp := export(t, s, ref)
	if !bytes.Equal(exp, before) {
		t.Fatal("the export changed when the vectors were stored")
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(exp, []byte("\n")), []byte("\n")) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for k := range m {
			if !slices.Contains(exportFields, k) {
				t.Fatalf("line %d has member %q: an export holds a version's fields only", i+1, k)
			}
		}
	}

	// Import, then reindex --embeddings fills what is missing.
	imp := openStore(t, t.TempDir())
	if _, err := Import(ctx, imp, ref, bytes.NewReader(exp), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := backlog(t, imp, ref); n != live || len(vectorsOf(t, imp, ref)) != 0 {
		t.Fatalf("after import: backlog %d and %d vectors, want %d and none", n, len(vectorsOf(t, imp, ref)), live)
	}
	if res, err := FillEmbeddings(ctx, imp, client, []memory.ProjectRef{ref}, io.Discard); err != nil || res[0].Missing != live || res[0].Left != 0 {
		t.Fatalf("reindex --embeddings after import = %+v, %v", res, err)
	}
	if got := vectorsOf(t, imp, ref); !sameVectors(got, want) {
		t.Fatalf("reindex --embeddings stored %d vectors unlike the source's %d", len(got), len(want))
	}

	// Import, then the server's worker fills what is missing from its start.
	imp2 := openStore(t, t.TempDir())
	if _, err := Import(ctx, imp2, ref, bytes.NewReader(exp), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	w := embed.NewWorker(imp2, client, embed.Options{Gather: -1})
	t.Cleanup(w.Close)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; backlog(t, imp2, ref) > 0; i++ {
		if i == 2000 {
			t.Fatalf("the worker left %d of %d imported entries without a vector: %+v", backlog(t, imp2, ref), live, w.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := vectorsOf(t, imp2, ref); !sameVectors(got, want) {
		t.Fatalf("the worker stored %d vectors unlike the source's %d", len(got), len(want))
	}
}
