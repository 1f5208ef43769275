package search

import (
	"errors"
	"slices"
	"testing"
)

// sameMeaning restates backupNote (a backup concept only) in other words:
// too few shared words for the hint by words.
const sameMeaning = "Our data stays safe: snapshot copies leave for offsite storage nightly, and we restore one every week."

// TestSimilarByMeaning: with meaning search on, a new entry that says what
// an entry says in other words is hinted by meaning, where the words alone
// hint nothing; an entry on another topic is not hinted.
func TestSimilarByMeaning(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
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
	if s := got[0].Score; s < float64(DefaultNearMin) || s > 1 {
		t.Errorf("score %.2f, want in [%.2f, 1]", s, DefaultNearMin)
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
// lower NearMin (a model of another scale) it is.
func TestSimilarByMeaningThreshold(t *testing.T) {
	const txt = "Draft\nunrelated words entirely"
	for _, tc := range []struct {
		min  float32
		want int
	}{{0, 0}, {0.75, 1}} {
		g := newMeaningRig(t, MeaningOptions{NearMin: tc.min})
		g.putVec(t, projA, "ops/near", "some content", 1, 0, 0, 0)
		g.emb.fix(txt, 0.8, 0.6, 0, 0) // cosine 0.8 with ops/near
		if got := similarOf(t, g.r, projA, "notes/new", txt); len(got) != tc.want {
			t.Errorf("NearMin %v: similar = %+v, want %d hint(s)", tc.min, got, tc.want)
		}
	}
}

// TestSimilarByMeaningStaysInProject: an entry of another project with the
// same meaning is never named.
func TestSimilarByMeaningStaysInProject(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projB, "ops/backups", "Nightly backups", backupNote)
	if got := similarOf(t, g.r, projA, "notes/safe", "Keeping data\n"+sameMeaning); len(got) != 0 {
		t.Fatalf("similar in %s names %+v of another project", projA, got)
	}
}

// TestSimilarByMeaningEndpointTrouble: while the endpoint's last call
// failed the hint calls nothing; a failing or hanging call leaves the hint
// to the words, counted as a meaning failure; the hint's texts never enter
// the query cache.
func TestSimilarByMeaningEndpointTrouble(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
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

	g.emb.set(nil, true) // hangs until the hint's wait is over
	wantWords("endpoint hangs")

	g.emb.set(nil, false)
	g.emb.failing.Store(true)
	calls = g.emb.calls.Load()
	wantWords("endpoint known to fail")
	if n := g.emb.calls.Load() - calls; n != 0 {
		t.Errorf("%d embedding calls while the endpoint is known to fail, want 0", n)
	}
}
