package search

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// Texts of the Similar tests: an entry, a near-duplicate of it (reordered,
// shortened, other word forms) and a write on a neighbouring topic.
const (
	backupTitle   = "Nightly backup of the workspace files"
	backupContent = "Every night at 02:00 UTC a cron job on munin-01 copies all workspace files to the NAS " +
		"with munin backup. The script verifies the checksum of each copy and reports failures to the operations channel. " +
		"We keep 14 daily and 8 weekly copies."
	backupAgain = "Workspace file backups: a cron job on munin-01 copies every workspace file nightly at 02:00 UTC " +
		"to the NAS using munin backup, then verifies each copy's checksum."
	neighbour = "Restoring a single entry needs no backup: older versions stay in its history, and the web UI " +
		"writes an old version back as a new one."
)

func similarOf(t testing.TB, r *Registry, ref memory.ProjectRef, slug, txt string) []memory.Similar {
	t.Helper()
	got, err := r.Similar(testCtx(t), ref, slug, txt)
	if err != nil {
		t.Fatalf("similar %s: %v", slug, err)
	}
	return got
}

func similarSlugs(ss []memory.Similar) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Slug
	}
	return out
}

// TestSimilarNamesNearDuplicate: a new slug restating an entry is answered
// with that entry, its title and a score in the hint's range; a write on a
// neighbouring topic, sharing some words, is not.
func TestSimilarNamesNearDuplicate(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	src.Put(projA, "runbooks/nightly-backup", backupTitle, backupContent)
	src.Put(projA, "decisions/db", "SQLite", "We store every workspace in one SQLite file; PostgreSQL was rejected.")
	got := similarOf(t, r, projA, "notes/backups", "Backups\n"+backupAgain)
	if len(got) != 1 || got[0].Slug != "runbooks/nightly-backup" || got[0].Title != backupTitle {
		t.Fatalf("similar = %+v, want the backup runbook alone", got)
	}
	if s := got[0].Score; s < SimilarThreshold || s > 1 {
		t.Errorf("score %.2f, want in [%.2f, 1]", s, SimilarThreshold)
	}
	if got := similarOf(t, r, projA, "notes/restore", "Restore of one entry\n"+neighbour); len(got) != 0 {
		t.Errorf("a neighbouring topic is hinted: %+v", got)
	}
}

// TestSimilarLeavesOutTheSlugItself: asked right after a new slug's first
// version was written, the slug itself is never its own duplicate.
func TestSimilarLeavesOutTheSlugItself(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	src.Put(projA, "runbooks/nightly-backup", backupTitle, backupContent)
	src.Put(projA, "notes/new", backupTitle, backupContent)
	if got := similarOf(t, r, projA, "notes/new", backupTitle+"\n"+backupContent); !slices.Equal(similarSlugs(got), []string{"runbooks/nightly-backup"}) {
		t.Errorf("a new slug with the same text: similar = %+v", got)
	}
}

// TestSimilarAtMostThreeBestFirst: of five copies, the three closest are
// named, best first.
func TestSimilarAtMostThreeBestFirst(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	// copy/0 has every word of the new text, each later copy loses a few.
	words := text.Analyze(backupContent).Seq
	for i := range 5 {
		var content string
		for _, w := range words[:len(words)-3*i] {
			content += w.Lower + " "
		}
		src.Put(projA, fmt.Sprintf("copy/%d", i), backupTitle, content)
	}
	got := similarOf(t, r, projA, "notes/new", backupTitle+"\n"+backupContent)
	if want := []string{"copy/0", "copy/1", "copy/2"}; !slices.Equal(similarSlugs(got), want) {
		t.Fatalf("similar = %+v, want %v", got, want)
	}
	if len(got) > memory.MaxSimilar || got[0].Score < got[1].Score || got[1].Score < got[2].Score {
		t.Errorf("not at most %d, best first: %+v", memory.MaxSimilar, got)
	}
}

// TestSimilarStaysInItsProject: an entry of another project, even one of
// the same workspace with the same text, is never named (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func TestSimilarStaysInItsProject(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	src.Put(projB, "runbooks/nightly-backup", backupTitle, backupContent)
	src.Put(projA, "decisions/db", "SQLite", "We store every workspace in one SQLite file.")
	if got := similarOf(t, r, projA, "notes/backups", backupTitle+"\n"+backupContent); len(got) != 0 {
		t.Fatalf("similar in %s names %+v of %s", projA, got, projB)
	}
	if got := similarOf(t, r, projB, "notes/backups", backupTitle+"\n"+backupContent); len(got) != 1 {
		t.Fatalf("similar in %s = %+v, want its own entry", projB, got)
	}
}

// TestSimilarLeavesOutForgottenAndStale: a forgotten entry, and one that has
// expired or was superseded when it is read, is no hint.
func TestSimilarLeavesOutForgottenAndStale(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	for _, slug := range []string{"a/forgotten", "b/expired", "c/superseded", "d/live"} {
		src.Put(projA, slug, backupTitle, backupContent)
	}
	src.Forget(projA, "a/forgotten")
	past := time.Now().Add(-time.Hour)
	src.SetHooks(nil, func(_ memory.ProjectRef, slug string, v memory.Version, err error) (memory.Version, error) {
		switch slug {
		case "b/expired":
			v.ValidUntil = &past
		case "c/superseded":
			v.SupersededBy = "d/live"
		}
		return v, err
	})
	if got := similarOf(t, r, projA, "notes/new", backupTitle+"\n"+backupContent); !slices.Equal(similarSlugs(got), []string{"d/live"}) {
		t.Fatalf("similar = %+v, want d/live alone", got)
	}
}

// TestSimilarFailsWhenTheSourceFails: Similar reports a failing read (the
// service then answers the remember without a hint).
func TestSimilarFailsWhenTheSourceFails(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler)})
	src.Put(projA, "runbooks/nightly-backup", backupTitle, backupContent)
	boom := errors.New("disk on fire")
	src.SetHooks(nil, func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error) {
		return memory.Version{}, boom
	})
	if _, err := r.Similar(testCtx(t), projA, "notes/new", backupTitle+"\n"+backupContent); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

// TestScore: the share of the new text's words the entry has, word forms
// of either language matching, 0 below similarMinShared shared words.
func TestScore(t *testing.T) {
	for _, c := range []struct {
		mine, theirs string
		want         float64
	}{
		{"backup nightly checksum NAS cron", "backups run nightly; a cron job checks each checksum on the NAS", 1},
		{"backup nightly checksum NAS cron kafka broker", "backups run nightly; a cron job checks each checksum on the NAS", 5.0 / 7},
		{"Datenbanken gesichert Prüfsummen Nacht Kopie", "Die Datenbank wird jede Nacht gesichert, jede Kopie mit Prüfsumme", 1},
		{"backup nightly checksum", "backup nightly checksum", 0}, // three words: by chance
		{"kafka broker topic partition", "backups run nightly", 0},
	} {
		got := Score(text.Analyze(c.mine).Seq, text.Analyze(c.theirs).Seq)
		if d := got - c.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("Score(%q, %q) = %.3f, want %.3f", c.mine, c.theirs, got, c.want)
		}
	}
}
