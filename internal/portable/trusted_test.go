package portable

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/store"
)

// Export and import of stage 11's data: valid_until, supersedes and
// proposals (issue 23, "Load and failure").

// propose makes a proposal and fails the test on error.
func propose(t testing.TB, s *store.Store, ref memory.ProjectRef, w memory.Write) int64 {
	t.Helper()
	w.Review = memory.ProposeAlways
	res, err := s.Append(ctx, ref, w)
	if err != nil || res.Proposal == 0 {
		t.Fatalf("propose %s: %+v, %v", w.Slug, res, err)
	}
	return res.Proposal
}

// trusted fills a project with what stage 11 added: an entry past its
// valid_until and one before it; entries superseded by a slug that comes
// before them in slug order (so before them in an export); a superseded
// entry written again afterwards (live again) and one forgotten
// afterwards; and proposals pending, approved and rejected, one a forget,
// one with valid_until, supersedes and similar.
func trusted(t testing.TB, s *store.Store, ref memory.ProjectRef) {
	t.Helper()
	now := time.Now()
	past, future := now.Add(-time.Hour), now.Add(24*time.Hour)
	write(t, s, ref, memory.Write{Slug: "facts/expired", Title: "Old price", Content: "The licence costs 100 euros.", ValidUntil: &past})
	write(t, s, ref, memory.Write{Slug: "facts/until", Title: "Freeze", Content: "Code freeze holds until Friday.", ValidUntil: &future})
	write(t, s, ref, memory.Write{Slug: "z/old", Title: "Old deploy", Content: "Deploy with the shell script."})
	write(t, s, ref, memory.Write{Slug: "b/revived", Title: "Cache", Content: "The cache lives in Redis."})
	write(t, s, ref, memory.Write{Slug: "c/forgotten", Title: "Queue", Content: "Jobs go through the queue."})
	write(t, s, ref, memory.Write{Slug: "a/successor", Title: "New deploy", Content: "Deploy with the pipeline, not the shell script.",
		Supersedes: []string{"z/old"}})
	write(t, s, ref, memory.Write{Slug: "a/replacer", Title: "Cache gone", Content: "The cache is gone.",
		Supersedes: []string{"b/revived", "c/forgotten"}})
	write(t, s, ref, memory.Write{Slug: "b/revived", Title: "Cache", Content: "The cache is back in Redis."})
	write(t, s, ref, memory.Write{Slug: "c/forgotten", Deleted: true})

	propose(t, s, ref, memory.Write{Slug: "facts/until", Title: "Freeze", Content: "Code freeze holds until Monday.",
		Agent: "pia", ValidUntil: &future, Supersedes: []string{"facts/expired"},
		Similar: []memory.Similar{{Slug: "facts/expired", Title: "Old price", Score: 0.8125}}})
	approved := propose(t, s, ref, memory.Write{Slug: "notes/new", Title: "Runbook", Content: "Restart the worker twice.", Tags: []string{"ops"}, Agent: "pia"})
	rejected := propose(t, s, ref, memory.Write{Slug: "b/revived", Title: "Cache", Content: "The cache lives in memcached.", Agent: "piet"})
	propose(t, s, ref, memory.Write{Slug: "facts/until", Deleted: true, Agent: "piet"})
	if _, err := s.Approve(ctx, ref, approved, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(ctx, ref, rejected, "rita", "", "memcached was never used here"); err != nil {
		t.Fatal(err)
	}
}

// asJSON renders v for comparing answers (pointers by value).
func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// state is what get, list, history, "as of" reads, recall (with and
// without stale entries) and the proposals answer for a project.
func state(t testing.TB, s *store.Store, ref memory.ProjectRef) string {
	t.Helper()
	var b strings.Builder
	list, _, err := s.List(ctx, ref, memory.ListQuery{Limit: 200})
	fmt.Fprintf(&b, "list %s %v\n", asJSON(t, list), err)
	var slugs []string
	var times []time.Time
	if err := s.ScanVersions(ctx, ref, func(v memory.Version) error {
		if v.Version == 1 {
			slugs = append(slugs, v.Slug)
		}
		times = append(times, v.CreatedAt)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, slug := range slugs {
		v, latest, err := s.Get(ctx, ref, slug, 0)
		h, herr := s.History(ctx, ref, slug, 100)
		fmt.Fprintf(&b, "get %s %s %d %v\nhistory %s %v\n", slug, asJSON(t, v), latest, err, asJSON(t, h), herr)
		for _, at := range times {
			v, latest, err := s.GetAsOf(ctx, ref, slug, 0, at)
			fmt.Fprintf(&b, "get %s as of %s: %s %d %v\n", slug, at.Format(time.RFC3339Nano), asJSON(t, v), latest, err)
		}
	}
	for _, at := range times {
		l, _, err := s.ListAsOf(ctx, ref, memory.ListQuery{Limit: 200}, at)
		fmt.Fprintf(&b, "list as of %s: %s %v\n", at.Format(time.RFC3339Nano), asJSON(t, l), err)
	}
	reg := search.NewRegistry(s, search.Options{Logger: slog.New(slog.DiscardHandler)})
	defer reg.Close()
	for _, q := range []string{"deploy", "cache", "licence", "freeze", "queue", "runbook", "sqlite", "Datenbank", "topic", "köln", "remembered"} {
		for _, stale := range []bool{false, true} {
			fmt.Fprintf(&b, "recall %q include_stale=%v %s\n", q, stale,
				recalled(t, reg, ref, memory.SearchQuery{Text: q, Limit: 50, IncludeStale: stale}))
		}
	}
	props, cur, err := s.Proposals(ctx, ref, "", "", 0, memory.MaxPendingProposals)
	for i := range props {
		props[i].ID = 0 // a row id of the file, not kept by an import
	}
	n, nerr := s.PendingCount(ctx, ref)
	fmt.Fprintf(&b, "proposals %s %v %v\npending %d %v\n", asJSON(t, props), cur, err, n, nerr)
	return b.String()
}

// recalled is a recall's answer as text. Hits of equal score come in no
// fixed order, so they are put in slug order; stale hits stay below live
// ones, as recall ranks them.
func recalled(t testing.TB, reg *search.Registry, ref memory.ProjectRef, q memory.SearchQuery) string {
	t.Helper()
	hits, err := reg.Search(ctx, ref, q)
	stale := func(h memory.Hit) int {
		if h.State == "" {
			return 0
		}
		return 1
	}
	slices.SortFunc(hits, func(a, b memory.Hit) int {
		return cmp.Or(cmp.Compare(stale(a), stale(b)), cmp.Compare(b.Score, a.Score), strings.Compare(a.Slug, b.Slug))
	})
	return fmt.Sprintf("%s %v", asJSON(t, hits), err)
}

// sameState fails the test at the first line in which two states differ.
func sameState(t testing.TB, what, a, b string) {
	t.Helper()
	if a == b {
		return
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			t.Fatalf("%s answers differently:\n%s\n---\n%s", what, al[i], bl[i])
		}
	}
	t.Fatalf("%s answers differently: %d lines vs %d", what, len(al), len(bl))
}

// TestExportImportTrustedMemory: expired, superseded and revived entries
// and pending, approved and rejected proposals survive export → import
// into a fresh data directory: the same bytes on the next export, the same
// answers to get, list, history, "as of", recall and the proposal queue.
// Small batches put a superseding version and the entry it supersedes into
// different transactions.
func TestExportImportTrustedMemory(t *testing.T) {
	src := openStore(t, t.TempDir())
	ref := ensure(t, src, "acme", "backend")
	trusted(t, src, ref)
	fill(t, src, ref)
	first := export(t, src, ref)
	for _, want := range []string{`"valid_until":"`, `"supersedes":["z/old"]`, `{"proposal":{"slug":"facts/until"`,
		`"state":"pending"`, `"state":"approved"`, `"decided_by":"rita"`, `"reason":"memcached was never used here"`,
		`"similar":[{"slug":"facts/expired","title":"Old price","score":0.8125}]`} {
		if !bytes.Contains(first, []byte(want)) {
			t.Fatalf("export lacks %s:\n%s", want, first)
		}
	}

	for _, batch := range []int{1, 3, 500} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			dst := openStore(t, t.TempDir())
			res, err := Import(ctx, dst, ref, bytes.NewReader(first), ImportOptions{BatchSize: batch})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if res.Proposals != 4 || res.ProposalsImported != 4 || res.Skipped != 0 || res.Imported != res.Lines {
				t.Fatalf("import result %+v, want every version and 4 proposals imported", res)
			}
			if second := export(t, dst, ref); !bytes.Equal(first, second) {
				t.Fatalf("re-export differs:\n%s\n---\n%s", first, second)
			}
			sameState(t, "the imported project", state(t, src, ref), state(t, dst, ref))

			// What the state compares is there, not absent on both sides.
			for slug, by := range map[string]string{"z/old": "a/successor", "b/revived": "", "a/successor": ""} {
				if v, _, err := dst.Get(ctx, ref, slug, 0); err != nil || v.SupersededBy != by {
					t.Errorf("get %s: superseded by %q, %v; want %q", slug, v.SupersededBy, err, by)
				}
			}
			if v, _, err := dst.Get(ctx, ref, "facts/expired", 0); err != nil || !v.Expired(time.Now()) {
				t.Errorf("get facts/expired: %+v, %v; want expired", v, err)
			}
			if n, err := dst.PendingCount(ctx, ref); err != nil || n != 2 {
				t.Errorf("pending proposals after import: %d, %v; want 2", n, err)
			}

			again, err := Import(ctx, dst, ref, bytes.NewReader(first), ImportOptions{BatchSize: batch})
			if err != nil || again.Imported != 0 || again.ProposalsImported != 0 || again.ProposalsSkipped != 4 {
				t.Fatalf("second import = %+v, %v; want everything skipped", again, err)
			}
			if third := export(t, dst, ref); !bytes.Equal(first, third) {
				t.Fatal("a second import changed the export")
			}

			// An imported pending proposal is reviewed as any other: its
			// approval is the entry's next version and supersedes what it named.
			pending, _, err := dst.Proposals(ctx, ref, memory.ProposalPending, "pia", 0, 10)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pia's pending proposals after import: %+v, %v", pending, err)
			}
			if res, err := dst.Approve(ctx, ref, pending[0].ID, "rita", memory.Write{}); err != nil || res.Version != 2 {
				t.Fatalf("approving the imported proposal: %+v, %v; want version 2 of facts/until", res, err)
			}
			if v, _, err := dst.Get(ctx, ref, "facts/expired", 0); err != nil || v.SupersededBy != "facts/until" {
				t.Fatalf("facts/expired after the approval: %+v, %v; want superseded by facts/until", v, err)
			}
		})
	}
}

// TestImportOldExport: a file written before stage 11 (no proposal lines,
// no valid_until or supersedes; testdata/export-stage10.jsonl was written
// by `munin export` of commit 6b9c0da) imports unchanged, and an export of
// the imported history gives the file's bytes again: a version without the
// new fields is written exactly as before.
func TestImportOldExport(t *testing.T) {
	old, err := os.ReadFile("testdata/export-stage10.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir())
	ref := memory.ProjectRef{Workspace: "acme", Project: "backend"}
	res, err := Import(ctx, s, ref, bytes.NewReader(old), ImportOptions{BatchSize: 4})
	lines := bytes.Count(old, []byte("\n"))
	if err != nil || res.Lines != lines || res.Imported != lines || res.Proposals != 0 {
		t.Fatalf("import of the old file = %+v, %v; want %d versions imported", res, err, lines)
	}
	if got := export(t, s, ref); !bytes.Equal(old, got) {
		t.Fatalf("export of the imported old file differs:\n%s\n---\n%s", old, got)
	}
	list, _, err := s.List(ctx, ref, memory.ListQuery{Limit: 100})
	if err != nil || len(list) == 0 {
		t.Fatalf("list after import: %v, %v", list, err)
	}
	for _, e := range list {
		if e.ValidUntil != nil || e.SupersededBy != "" {
			t.Errorf("an old entry came in stale: %+v", e)
		}
	}
}
