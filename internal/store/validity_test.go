package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// supersede appends slug superseding the slugs named.
func supersedeWrite(s *Store, ref memory.ProjectRef, slug string, supersedes ...string) (memory.WriteResult, error) {
	return s.Append(context.Background(), ref, memory.Write{Slug: slug, Title: "t " + slug, Content: "new " + slug, Agent: "tester", Supersedes: supersedes})
}

// versionsOf counts the versions of slug on disk.
func versionsOf(t *testing.T, s *Store, ref memory.ProjectRef, slug string) int {
	t.Helper()
	hist, err := s.History(context.Background(), ref, slug, 0)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(hist)
}

func TestValidUntilIsStoredAndClearedByALaterVersion(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "fact", Title: "f", Content: "holds for an hour", Agent: "a", ValidUntil: &until}); err != nil {
		t.Fatal(err)
	}
	v, err := s.Latest(ctx, ref, "fact")
	if err != nil {
		t.Fatal(err)
	}
	if v.ValidUntil == nil || !v.ValidUntil.Equal(until) {
		t.Fatalf("valid_until = %v, want %v", v.ValidUntil, until)
	}
	es, _, err := s.List(ctx, ref, memory.ListQuery{})
	if err != nil || len(es) != 1 || es[0].ValidUntil == nil || !es[0].ValidUntil.Equal(until) {
		t.Fatalf("list: %+v, %v: want valid_until %v", es, err, until)
	}
	many, err := s.LatestMany(ctx, ref, []string{"fact", "none"})
	if err != nil || many["fact"].ValidUntil == nil {
		t.Fatalf("LatestMany: %+v, %v: want valid_until", many, err)
	}

	put(t, s, ref, "fact", "holds for good")
	v, err = s.Latest(ctx, ref, "fact")
	if err != nil || v.ValidUntil != nil {
		t.Fatalf("after a version without valid_until: %v, %v: want none", v.ValidUntil, err)
	}
	if es, _, _ := s.List(ctx, ref, memory.ListQuery{}); es[0].ValidUntil != nil {
		t.Fatalf("list after a version without valid_until: %v", es[0].ValidUntil)
	}
	// The first version keeps its own.
	if old, _, err := s.Get(ctx, ref, "fact", 1); err != nil || old.ValidUntil == nil {
		t.Fatalf("version 1: %v, %v: want its valid_until", old.ValidUntil, err)
	}
}

func TestSupersedesMarksTheOldEntryAndANewVersionRevivesIt(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	put(t, s, ref, "old/a", "first")
	put(t, s, ref, "old/b", "second")
	res, err := supersedeWrite(s, ref, "new", "old/a", "old/b")
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"old/a", "old/b"} {
		v, err := s.Latest(ctx, ref, slug)
		if err != nil || v.SupersededBy != "new" {
			t.Fatalf("%s: superseded_by %q, %v; want new", slug, v.SupersededBy, err)
		}
	}
	nv, _, err := s.Get(ctx, ref, "new", res.Version)
	if err != nil || strings.Join(nv.Supersedes, ",") != "old/a,old/b" || nv.SupersededBy != "" {
		t.Fatalf("new: supersedes %v superseded_by %q, %v", nv.Supersedes, nv.SupersededBy, err)
	}
	es, _, err := s.List(ctx, ref, memory.ListQuery{})
	if err != nil || len(es) != 3 || es[0].SupersededBy != "" || es[1].SupersededBy != "new" || es[2].SupersededBy != "new" {
		t.Fatalf("list: %+v, %v", es, err)
	}
	// An older version is not the entry's state.
	put(t, s, ref, "old/b", "second, again")
	if v, _ := s.Latest(ctx, ref, "old/b"); v.SupersededBy != "" {
		t.Fatalf("a new version of a superseded entry must make it live: superseded_by %q", v.SupersededBy)
	}
	if v, _, _ := s.Get(ctx, ref, "old/a", 1); v.SupersededBy != "new" {
		t.Fatalf("old/a v1 (latest): superseded_by %q, want new", v.SupersededBy)
	}
	if v, _, _ := s.Get(ctx, ref, "old/b", 1); v.SupersededBy != "" {
		t.Fatalf("old/b v1 (not latest): superseded_by %q, want none", v.SupersededBy)
	}
}

func TestSupersedesRefusalsWriteNothing(t *testing.T) {
	s, ref, _ := openWorkspace(t)
	other := ensure(t, s, "ws", "other")
	put(t, s, ref, "live", "x")
	put(t, s, ref, "gone", "x")
	if _, err := s.Append(context.Background(), ref, memory.Write{Slug: "gone", Deleted: true, Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, other, "elsewhere", "x")
	many := make([]string, 100)
	for i := range many {
		many[i] = "live"
	}
	for _, c := range []struct {
		name       string
		supersedes []string
		code       memory.Code
		names      string
	}{
		{"missing", []string{"live", "missing"}, memory.CodeNotFound, "missing"},
		{"forgotten", []string{"gone"}, memory.CodeNotFound, "gone"},
		{"itself", []string{"w"}, memory.CodeInvalid, "itself"},
		{"100 slugs", many, memory.CodeInvalid, "at most 16"},
		// Another project's slug is not reachable by name: supersedes names
		// slugs of the written project, where "elsewhere" does not exist.
		{"another project's slug", []string{"elsewhere"}, memory.CodeNotFound, "elsewhere"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := supersedeWrite(s, ref, "w", c.supersedes...)
			wantCode(t, err, c.code)
			if !strings.Contains(err.Error(), c.names) {
				t.Fatalf("error %q does not name %q", err, c.names)
			}
			if n := versionsOf(t, s, ref, "w"); n != 0 {
				t.Fatalf("refused write left %d versions", n)
			}
			if v, _ := s.Latest(context.Background(), ref, "live"); v.SupersededBy != "" {
				t.Fatalf("refused write marked live superseded by %q", v.SupersededBy)
			}
		})
	}
}

func TestSupersedesRefusesCycles(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	put(t, s, ref, "a", "x")
	if _, err := supersedeWrite(s, ref, "b", "a"); err != nil { // b supersedes a
		t.Fatal(err)
	}
	if _, err := supersedeWrite(s, ref, "c", "b"); err != nil { // c supersedes b
		t.Fatal(err)
	}
	// a superseding c closes a → c → b → a; a directly: b → a.
	for _, target := range []string{"c", "b"} {
		_, err := supersedeWrite(s, ref, "a", target)
		wantCode(t, err, memory.CodeInvalid)
		if !strings.Contains(err.Error(), "cycle") {
			t.Fatalf("a supersedes %s: %v, want a cycle named", target, err)
		}
	}
	if n := versionsOf(t, s, ref, "a"); n != 1 {
		t.Fatalf("refused cycles wrote versions of a: %d", n)
	}
	if v, _ := s.Latest(ctx, ref, "c"); v.SupersededBy != "" {
		t.Fatalf("refused cycle marked c superseded by %q", v.SupersededBy)
	}
	// Once b is written again without supersedes, the chain is broken.
	put(t, s, ref, "b", "on its own")
	if _, err := supersedeWrite(s, ref, "a", "c"); err != nil {
		t.Fatalf("no cycle left, still refused: %v", err)
	}
}

// TestApprovalSupersedesAsOfItsApproval: a proposal's supersedes are
// checked and applied by the writer when it is approved — against the
// memory then, not when it was proposed.
func TestApprovalSupersedesAsOfItsApproval(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	put(t, s, ref, "old", "x")
	put(t, s, ref, "older", "x")
	propose := func(slug, target string) int64 {
		t.Helper()
		res, err := s.Append(ctx, ref, memory.Write{Slug: slug, Title: "t", Content: "y", Agent: "p", Review: memory.ProposeAlways, Supersedes: []string{target}})
		if err != nil || res.Proposal == 0 {
			t.Fatalf("propose %s: %+v, %v", slug, res, err)
		}
		if v, _ := s.Latest(ctx, ref, target); v.SupersededBy != "" {
			t.Fatalf("a pending proposal marked %s superseded by %q", target, v.SupersededBy)
		}
		return res.Proposal
	}
	ok := propose("new", "old")
	if _, err := s.Approve(ctx, ref, ok, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Latest(ctx, ref, "old"); v.SupersededBy != "new" {
		t.Fatalf("approved: old superseded_by %q, want new", v.SupersededBy)
	}
	late := propose("newer", "older")
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "older", Deleted: true, Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Approve(ctx, ref, late, "rita", memory.Write{})
	wantCode(t, err, memory.CodeNotFound)
	if n := versionsOf(t, s, ref, "newer"); n != 0 {
		t.Fatalf("a refused approval wrote %d versions", n)
	}
}
