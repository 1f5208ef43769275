package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// staleWorld is ws/proj with plans/old superseded by plans/new,
// offers/spring valid for an hour, and notes/live; the service and the web
// UI share one clock (the service decides what has expired, the web UI
// marks the list), which tests move.
func staleWorld(t *testing.T) *ui {
	t.Helper()
	var u *ui
	env := servicetest.New(t, service.Options{Now: func() time.Time { return u.clock.now() }})
	u = newUIOn(t, env)
	ctx := context.Background()
	writer := memory.NewCaller(u.writerKey)
	u.remember(t, u.writerKey, "plans/old", "The old plan.")
	if _, err := env.Svc.Remember(ctx, writer, service.RememberRequest{Slug: "plans/new", Content: "The new plan.", Supersedes: []string{"plans/old"}}); err != nil {
		t.Fatal(err)
	}
	until := u.clock.now().Add(time.Hour).UTC().Format(time.RFC3339)
	if _, err := env.Svc.Remember(ctx, writer, service.RememberRequest{Slug: "offers/spring", Content: "Spring offer.", ValidUntil: until}); err != nil {
		t.Fatal(err)
	}
	u.remember(t, u.writerKey, "notes/live", "Still true.")
	return u
}

// TestStaleEntryPagesAreMarked: a superseded entry's page names its
// successor with a link; an entry past its valid_until says it expired; a
// live entry says neither. Both stale ones stay readable.
func TestStaleEntryPagesAreMarked(t *testing.T) {
	u := staleWorld(t)
	b := u.signIn(t, u.reader)
	if _, body := b.get(projPath + "/e/offers/spring"); strings.Contains(body, `id="entry-expired"`) {
		t.Error("an entry before its valid_until is marked expired")
	}
	u.clock.advance(2 * time.Hour)
	_, body := b.get(projPath + "/e/plans/old")
	if !strings.Contains(body, `id="entry-superseded"`) || !strings.Contains(body, `<a href="/w/ws/p/proj/e/plans/new" id="superseded-by">plans/new</a>`) || !strings.Contains(body, "The old plan.") {
		t.Errorf("the superseded entry's page does not name its successor:\n%s", body)
	}
	_, body = b.get(projPath + "/e/offers/spring")
	if !strings.Contains(body, `id="entry-expired"`) || !strings.Contains(body, "Spring offer.") {
		t.Errorf("the expired entry's page is not marked:\n%s", body)
	}
	if _, body = b.get(projPath + "/e/notes/live"); strings.Contains(body, `id="entry-expired"`) || strings.Contains(body, `id="entry-superseded"`) {
		t.Error("a live entry is marked stale")
	}
}

// TestSearchFindsStaleEntriesOnlyWhenAsked: the project's search leaves
// expired and superseded entries out; with "also expired and superseded"
// it finds them, marked.
func TestSearchFindsStaleEntriesOnlyWhenAsked(t *testing.T) {
	u := staleWorld(t)
	u.clock.advance(2 * time.Hour)
	b := u.signIn(t, u.reader)
	_, body := b.get(projPath + "?q=plan+offer")
	if strings.Contains(body, "plans/old") || strings.Contains(body, "offers/spring") || !strings.Contains(body, "plans/new") {
		t.Errorf("a search without stale entries:\n%s", body)
	}
	_, body = b.get(projPath + "?q=plan+offer&stale=1")
	text := strings.Join(strings.Fields(body), " ")
	for _, want := range []string{`id="stale" checked`, "plans/new", `<span class="slug">plans/old</span>`, `<span class="mark superseded">superseded</span>`,
		`<span class="slug">offers/spring</span>`, `<span class="mark expired">expired</span>`} {
		if !strings.Contains(text, want) {
			t.Errorf("a search with stale entries lacks %s", want)
		}
	}
}

// TestStaleEntriesAreMarkedInTheList: the project's entry list keeps
// superseded and expired entries, marked ("superseded by" with a link to
// the successor, "expired").
func TestStaleEntriesAreMarkedInTheList(t *testing.T) {
	u := staleWorld(t)
	b := u.signIn(t, u.reader)
	if _, body := b.get(projPath + "?sort=slug"); strings.Contains(body, "mark expired") {
		t.Error("an entry before its valid_until is marked expired")
	}
	u.clock.advance(2 * time.Hour)
	_, body := b.get(projPath + "?sort=slug")
	text := strings.Join(strings.Fields(body), " ")
	for _, want := range []string{`<tr class="entry-row superseded">`,
		`<span class="mark superseded">superseded by <a href="/w/ws/p/proj/e/plans/new">plans/new</a></span>`,
		`<tr class="entry-row expired">`, `<span class="mark expired" title="valid until`} {
		if !strings.Contains(text, want) {
			t.Errorf("the entry list lacks %s", want)
		}
	}
	if n := strings.Count(text, `<tr class="entry-row">`); n != 2 {
		t.Errorf("%d unmarked rows, want 2 (plans/new, notes/live)", n)
	}
}
