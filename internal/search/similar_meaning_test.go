package search

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"munin/internal/memory"
)

// sameMeaning restates backupNote (a backup concept only) in other words:
// too few shared words for the hint by words.
const sameMeaning = "Our data stays safe: snapshot copies leave for offsite storage nightly, and we restore one every week."

// testNearMin is the threshold the tests switch the hint by meaning on with
// (it is off without one).
const testNearMin = 0.85

// TestSimilarByMeaning: with meaning search on, a new entry that says what
// an entry says in other words is hinted by meaning, where the words alone
// hint nothing; an entry on another topic is not hinted.
func TestSimilarByMeaning(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{NearMin: testNearMin})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	g.put(t, projA, "ops/release", "Release train", "Releases ship every second Tuesday after rollout review.")

	words := newTestRegistry(t, g.src, Options{})
	if got := similarOf(t, words, projA, "notes/safe", "Keeping data\n"+sameMeaning); len(got) != 0 {
		t.Fatalf("by words alone %+v: the test needs a restatement the words miss", got)
	}
	got := similarOf(t, g.r, projA, "notes/safe", "Keeping data\n"+sameMeaning)
	if len(got) != 1 || got[0].Slug != "ops/backups" || got[0].Title != "Nightly backups" {
		t.Fatalf("similar = %+v, want the backup note by meaning", got)
	}
	if s := got[0].Score; s < testNearMin || s > 1 {
		t.Errorf("score %.2f, want in [%.2f, 1]", s, testNearMin)
	}
	if got := similarOf(t, g.r, projA, "notes/meet", "Standup\nThe standup meeting moves to nine."); len(got) != 0 {
		t.Fatalf("a note on another topic is hinted: %+v", got)
	}
	// The slug itself is never its own hint, also when it has a vector.
	if got := similarOf(t, g.r, projA, "ops/backups", "Nightly backups\n"+sameMeaning); len(got) != 0 {
		t.Fatalf("the entry itself is hinted: %+v", got)
	}
}

// TestSimilarByMeaningThreshold: a vector below NearMin is no hint; with a
// lower NearMin (a model of another scale) it is; without NearMin the hint
// by meaning is off and calls nothing.
func TestSimilarByMeaningThreshold(t *testing.T) {
	const txt = "Draft\nunrelated words entirely"
	for _, tc := range []struct {
		min  float32
		want int
	}{{0, 0}, {0.75, 1}, {0.85, 0}} {
		g := newMeaningRig(t, MeaningOptions{NearMin: tc.min})
		g.putVec(t, projA, "ops/near", "some content", 1, 0, 0, 0)
		g.emb.fix(txt, 0.8, 0.6, 0, 0) // cosine 0.8 with ops/near
		calls := g.emb.calls.Load()
		if got := similarOf(t, g.r, projA, "notes/new", txt); len(got) != tc.want {
			t.Errorf("NearMin %v: similar = %+v, want %d hint(s)", tc.min, got, tc.want)
		}
		if n := g.emb.calls.Load() - calls; (n == 0) != (tc.min == 0) {
			t.Errorf("NearMin %v: %d embedding calls", tc.min, n)
		}
	}
}

// TestSimilarByMeaningStaysInProject: an entry of another project with the
// same meaning is never named.
func TestSimilarByMeaningStaysInProject(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{NearMin: testNearMin})
	g.put(t, projB, "ops/backups", "Nightly backups", backupNote)
	if got := similarOf(t, g.r, projA, "notes/safe", "Keeping data\n"+sameMeaning); len(got) != 0 {
		t.Fatalf("similar in %s names %+v of another project", projA, got)
	}
}

// TestSimilarByMeaningEndpointTrouble: while the endpoint's last call
// failed the hint calls nothing; a failing call leaves the hint to the
// words, counted as a meaning failure; a call that outlasts the hint's wait
// pauses the hint by meaning (no call for vector.NearPause); the hint's
// texts never enter the query cache.
func TestSimilarByMeaningEndpointTrouble(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{NearMin: testNearMin})
	g.put(t, projA, "runbooks/nightly-backup", backupTitle, backupContent)
	again := "Backups\n" + backupAgain
	wantWords := func(what string) {
		t.Helper()
		if got := similarSlugs(similarOf(t, g.r, projA, "notes/backups", again)); !slices.Equal(got, []string{"runbooks/nightly-backup"}) {
			t.Fatalf("%s: similar = %v, want the runbook by words", what, got)
		}
	}
	calls := g.emb.calls.Load()
	wantWords("healthy")
	wantWords("healthy, same text again")
	if n := g.emb.calls.Load() - calls; n != 2 {
		t.Errorf("%d embedding calls for two hints of one text, want 2 (no query cache)", n)
	}

	g.emb.set(errors.New("boom"), false)
	failures := g.failures.Load()
	wantWords("endpoint answers errors")
	if g.failures.Load() == failures {
		t.Error("a failed embedding of the hint is not counted")
	}

	g.emb.set(nil, false)
	g.emb.failing.Store(true)
	calls = g.emb.calls.Load()
	wantWords("endpoint known to fail")
	if n := g.emb.calls.Load() - calls; n != 0 {
		t.Errorf("%d embedding calls while the endpoint is known to fail, want 0", n)
	}
	g.emb.failing.Store(false)

	g.emb.set(nil, true) // hangs until the hint gives up
	wantWords("endpoint hangs")
	g.emb.set(nil, false)
	calls = g.emb.calls.Load()
	wantWords("after a call too slow for the hint")
	if n := g.emb.calls.Load() - calls; n != 0 {
		t.Errorf("%d embedding calls right after one outlasted the hint's wait, want 0", n)
	}
}

// TestSimilarByMeaningSkipsForgotten: vectors of forgotten entries that are
// nearer than a live one neither are hinted nor keep it from the hint.
func TestSimilarByMeaningSkipsForgotten(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{NearMin: testNearMin})
	const txt = "Draft\nno shared words here"
	g.emb.fix(txt, 1, 0, 0, 0)
	g.putVec(t, projA, "live", "some content", 0.9, 0.1, 0, 0)
	for i := range memory.MaxSimilar + 2 {
		slug := fmt.Sprintf("gone-%d", i)
		g.putVec(t, projA, slug, "some content", 1, 0, 0, 0)
		g.src.Forget(projA, slug)
	}
	for round := range 2 {
		if got := similarSlugs(similarOf(t, g.r, projA, "notes/new", txt)); !slices.Equal(got, []string{"live"}) {
			t.Fatalf("round %d: similar = %v, want the live entry alone", round, got)
		}
	}
}
