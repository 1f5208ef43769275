package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
)

// TestSimilarSetting: on by default; SetSimilar changes it for one project
// only, and every write reports it (SimilarOff) from the write after the
// setter returned; a bad value is invalid and changes nothing.
func TestSimilarSetting(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	other := ensure(t, s, "ws", "q")
	if v, err := s.SimilarSetting(pctx, ref); err != nil || v != memory.SimilarOn {
		t.Fatalf("default similar setting: %q, %v; want on", v, err)
	}
	if res := put(t, s, ref, "a", "x"); res.SimilarOff {
		t.Fatalf("write with similar on reports SimilarOff")
	}
	if err := s.SetSimilar(pctx, ref, memory.SimilarOff); err != nil {
		t.Fatal(err)
	}
	if v, err := s.SimilarSetting(pctx, ref); err != nil || v != memory.SimilarOff {
		t.Fatalf("similar setting after SetSimilar(off): %q, %v", v, err)
	}
	if res := put(t, s, ref, "b", "x"); !res.SimilarOff {
		t.Errorf("write after SetSimilar(off) does not report SimilarOff")
	}
	if res := put(t, s, other, "b", "x"); res.SimilarOff {
		t.Errorf("SetSimilar(off) of %s reaches %s", ref, other)
	}
	// The review setting of the same row is left as it was, and the other
	// way round.
	if err := s.SetReview(pctx, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	if v, err := s.SimilarSetting(pctx, ref); err != nil || v != memory.SimilarOff {
		t.Errorf("SetReview changed similar to %q, %v", v, err)
	}
	if err := s.SetSimilar(pctx, ref, "maybe"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("SetSimilar(maybe): %v, want invalid", err)
	}
	if v, err := s.SimilarSetting(pctx, ref); err != nil || v != memory.SimilarOff {
		t.Errorf("a refused SetSimilar changed the setting to %q, %v", v, err)
	}
	if r, err := s.Review(pctx, ref); err != nil || r != memory.ReviewAgents {
		t.Errorf("SetSimilar changed review to %q, %v", r, err)
	}
	w := memory.Write{Slug: "c", Title: "c", Content: "x", Agent: "w", Review: memory.ProposeIfReviewed}
	if res, err := s.Append(pctx, ref, w); err != nil || res.Proposal == 0 || !res.SimilarOff {
		t.Errorf("proposal with review agents, similar off: %+v, %v; want a proposal reporting SimilarOff", res, err)
	}
	if err := s.SetSimilar(pctx, ref, memory.SimilarOn); err != nil {
		t.Fatal(err)
	}
	if res := put(t, s, ref, "d", "x"); res.SimilarOff {
		t.Errorf("write after SetSimilar(on) reports SimilarOff")
	}
	missing := memory.ProjectRef{Workspace: "ws", Project: "nope"}
	if err := s.SetSimilar(pctx, missing, memory.SimilarOff); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("SetSimilar of a missing project: %v, want not_found", err)
	}
}

// TestWritesReadTheSettingsFromTheWriter: once the writer knows a
// project's settings, a write does not read project_settings again. The
// test changes the row behind the writer's back (which nothing but the
// writer may do: invariant 1
// (docs/architecture.md#invariant-1-one-writer-per-workspace)); writes go
// on with the writer's copy, so none of them read the table.
func TestWritesReadTheSettingsFromTheWriter(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	if err := s.SetReview(pctx, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSimilar(pctx, ref, memory.SimilarOff); err != nil {
		t.Fatal(err)
	}
	// The copy survives a reopen only as the file's row: close and reopen
	// so that the first write fills it from the table.
	if err := s.CloseWorkspace(ref.Workspace); err != nil {
		t.Fatal(err)
	}
	w := memory.Write{Slug: "a", Title: "a", Content: "x", Agent: "w", Review: memory.ProposeIfReviewed}
	if res, err := s.Append(pctx, ref, w); err != nil || res.Proposal == 0 || !res.SimilarOff {
		t.Fatalf("first write after reopen: %+v, %v; want a proposal reporting SimilarOff", res, err)
	}
	db, err := sql.Open("sqlite3", fileURI(s.WorkspaceFile(ref.Workspace))+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE project_settings SET review = 'off', similar = 'on' WHERE project = ?`, ref.Project); err != nil {
		t.Fatal(err)
	}
	w.Slug = "b"
	if res, err := s.Append(pctx, ref, w); err != nil || res.Proposal == 0 || !res.SimilarOff {
		t.Errorf("write after the row changed behind the writer: %+v, %v; want the writer's settings (a proposal, SimilarOff)", res, err)
	}
}

// TestSettingsAfterARefusedCommit: a setter whose batch does not commit
// leaves the writer's copy as the file is, so the next write sees the old
// setting.
func TestSettingsAfterARefusedCommit(t *testing.T) {
	var refuse atomic.Bool
	s, err := Open(t.TempDir(), Options{Cluster: hooks{beforeCommit: func(string) error {
		if refuse.Load() {
			return errors.New("replica gone")
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "x") // the writer's copy is filled
	refuse.Store(true)
	if err := s.SetSimilar(pctx, ref, memory.SimilarOff); err == nil {
		t.Fatal("SetSimilar in a refused batch succeeded")
	}
	if err := s.SetReview(pctx, ref, memory.ReviewAgents); err == nil {
		t.Fatal("SetReview in a refused batch succeeded")
	}
	refuse.Store(false)
	w := memory.Write{Slug: "b", Title: "b", Content: "x", Agent: "w", Review: memory.ProposeIfReviewed}
	res, err := s.Append(pctx, ref, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.SimilarOff || res.Proposal != 0 {
		t.Errorf("write after refused setters: %+v; want a version with similar on (the settings never committed)", res)
	}
	if v, err := s.SimilarSetting(pctx, ref); err != nil || v != memory.SimilarOn {
		t.Errorf("similar setting after a refused SetSimilar: %q, %v", v, err)
	}
}

// TestSettingsFlipWhileWriting: writers write while the settings flip; a
// write made after SetSimilar or SetReview returned always sees the new
// value. Run with -race: the writer's copy is touched by the writer
// goroutine only.
func TestSettingsFlipWhileWriting(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	const writers, writes, flips = 8, 60, 24
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for g := range writers {
		wg.Go(func() {
			for i := range writes {
				w := memory.Write{Slug: fmt.Sprintf("g%d/%d", g, i%7), Title: "t", Content: fmt.Sprint(i), Agent: "w"}
				if _, err := s.Append(pctx, ref, w); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range flips {
			similar, review := memory.SimilarOn, memory.ReviewOff
			if i%2 == 0 {
				similar, review = memory.SimilarOff, memory.ReviewAgents
			}
			if err := s.SetSimilar(pctx, ref, similar); err != nil {
				errs <- err
				return
			}
			if err := s.SetReview(pctx, ref, review); err != nil {
				errs <- err
				return
			}
			res, err := s.Append(context.Background(), ref, memory.Write{Slug: fmt.Sprintf("flip/%d", i), Title: "t", Content: "x",
				Agent: "w", Review: memory.ProposeIfReviewed})
			if err != nil {
				errs <- err
				return
			}
			if res.SimilarOff != (similar == memory.SimilarOff) || (res.Proposal != 0) != (review == memory.ReviewAgents) {
				errs <- fmt.Errorf("flip %d: similar %s, review %s, write %+v", i, similar, review, res)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
