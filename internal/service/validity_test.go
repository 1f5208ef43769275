package service_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// movableClock is a service clock a test moves forward.
type movableClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movableClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *movableClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// recallSlugs recalls and renders the hits as "slug" or "slug:state".
func recallSlugs(t *testing.T, svc *service.Service, c memory.Caller, req service.RecallRequest) []string {
	t.Helper()
	res, err := svc.Recall(ctx, c, req)
	if err != nil {
		t.Fatalf("recall %q: %v", req.Query, err)
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Slug
		if h.State != "" {
			out[i] += ":" + h.State
		}
	}
	return out
}

func TestExpiredEntryLeavesRecallButGetShowsIt(t *testing.T) {
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	until := clock.Now().Add(time.Hour).Truncate(time.Second)
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "offer", Content: "the pelican discount holds this week", ValidUntil: until.Format(time.RFC3339)})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "rule", Content: "pelican sightings go to the log"})

	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "pelican discount"}), " "); got != "offer rule" {
		t.Fatalf("before valid_until: %q, want offer rule", got)
	}
	e, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "offer"})
	if err != nil || e.Expired || e.ValidUntil == nil || !e.ValidUntil.Equal(until) {
		t.Fatalf("get before valid_until: expired %v valid_until %v, %v", e.Expired, e.ValidUntil, err)
	}

	clock.add(2 * time.Hour)
	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "pelican discount"}), " "); got != "rule" {
		t.Fatalf("after valid_until: %q, want only rule", got)
	}
	e, err = env.Svc.Get(ctx, key, service.GetRequest{Slug: "offer"})
	if err != nil || !e.Expired || e.Content == "" {
		t.Fatalf("get after valid_until: %+v, %v: want the entry with expired true", e, err)
	}
	l, err := env.Svc.List(ctx, key, service.ListRequest{})
	if err != nil || len(l.Entries) != 2 || l.Entries[0].State != memory.StateExpired || l.Entries[1].State != "" {
		t.Fatalf("list after valid_until: %+v, %v: want offer marked expired", l.Entries, err)
	}
}

func TestSupersededEntryLeavesRecallButGetShowsIt(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "db/v1", Content: "we store heron data in postgres heron heron"})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "db/v2", Content: "we store heron data in sqlite", Supersedes: []string{"db/v1"}})

	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "heron data"}), " "); got != "db/v2" {
		t.Fatalf("recall: %q, want only db/v2", got)
	}
	e, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "db/v1"})
	if err != nil || e.SupersededBy != "db/v2" || e.Expired {
		t.Fatalf("get db/v1: superseded_by %q expired %v, %v", e.SupersededBy, e.Expired, err)
	}
	e, err = env.Svc.Get(ctx, key, service.GetRequest{Slug: "db/v2"})
	if err != nil || strings.Join(e.Supersedes, ",") != "db/v1" || e.SupersededBy != "" {
		t.Fatalf("get db/v2: supersedes %v superseded_by %q, %v", e.Supersedes, e.SupersededBy, err)
	}
	l, err := env.Svc.List(ctx, key, service.ListRequest{})
	if err != nil || len(l.Entries) != 2 || l.Entries[0].State != memory.StateSuperseded || l.Entries[1].State != "" {
		t.Fatalf("list: %+v, %v: want db/v1 marked superseded", l.Entries, err)
	}

	// Written again, the old entry holds again.
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "db/v1", Content: "heron data also in postgres, again"})
	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "heron data"}), " "); !strings.Contains(got, "db/v1") {
		t.Fatalf("recall after db/v1 was written again: %q, want it back", got)
	}
}

func TestIncludeStaleListsStaleHitsBelowLiveOnes(t *testing.T) {
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	// The stale entries match the query far better than the live one.
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "old", Title: "ibis ibis", Content: "ibis ibis ibis nesting"})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "soon", Title: "ibis", Content: "ibis ibis nesting ends",
		ValidUntil: clock.Now().Add(time.Minute).Format(time.RFC3339)})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "now", Content: "an ibis was seen near the lake among many other birds", Supersedes: []string{"old"}})
	clock.add(time.Hour)

	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "ibis"}), " "); got != "now" {
		t.Fatalf("without include_stale: %q, want now", got)
	}
	res, err := env.Svc.Recall(ctx, key, service.RecallRequest{Query: "ibis", IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		got[i] = h.Slug + ":" + h.State
		if i > 0 && h.Score > res.Hits[i-1].Score {
			t.Errorf("hit %d (%s) scores %v above the one before (%v)", i, h.Slug, h.Score, res.Hits[i-1].Score)
		}
	}
	if len(got) != 3 || got[0] != "now:" || !slicesHave(got[1:], "old:superseded", "soon:expired") {
		t.Fatalf("with include_stale: %v, want now first, then old (superseded) and soon (expired)", got)
	}
	// Through REST's GET the flag is a query parameter; MCP and POST take the field.
	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "ibis", IncludeStale: true, Limit: 1}), " "); got != "now" {
		t.Fatalf("include_stale, limit 1: %q, want the live hit", got)
	}
}

// slicesHave tells whether s holds exactly want, in any order.
func slicesHave(s []string, want ...string) bool {
	if len(s) != len(want) {
		return false
	}
	seen := map[string]int{}
	for _, x := range s {
		seen[x]++
	}
	for _, w := range want {
		if seen[w] == 0 {
			return false
		}
		seen[w]--
	}
	return true
}

func TestRecallKeepsItsLimitWhenStaleHitsAreLeftOut(t *testing.T) {
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now, BudgetOff: true})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	// 30 stale entries that match far better than the 12 live ones, so that
	// the best 40 candidates hold fewer than 10 live entries.
	var old []string
	for i := range 30 {
		slug := fmt.Sprintf("stale/%02d", i)
		req := service.RememberRequest{Slug: slug, Title: "kestrel kestrel", Content: "kestrel kestrel kestrel kestrel"}
		if i%2 == 0 {
			req.ValidUntil = clock.Now().Add(time.Minute).Format(time.RFC3339)
		} else {
			old = append(old, slug)
		}
		rememberSim(t, env.Svc, key, req)
	}
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "replacement", Content: "the old notes are replaced", Supersedes: old})
	for i := range 12 {
		rememberSim(t, env.Svc, key, service.RememberRequest{Slug: fmt.Sprintf("live/%02d", i),
			Content: "a kestrel hovered over the field next to the road while the farmer cut the hay and the dog barked"})
	}
	clock.add(time.Hour)
	got := recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "kestrel", Limit: 10})
	if len(got) != 10 {
		t.Fatalf("recall returned %d hits, want the limit 10: %v", len(got), got)
	}
	for _, s := range got {
		if !strings.HasPrefix(s, "live/") {
			t.Fatalf("recall returned %s among %v", s, got)
		}
	}
	got = recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "kestrel", Limit: 20, IncludeStale: true})
	if len(got) != 20 || strings.Count(strings.Join(got, " "), "live/") != 12 {
		t.Fatalf("include_stale, limit 20: %v, want the 12 live hits first, then 8 stale ones", got)
	}
	for i, s := range got {
		if live := strings.HasPrefix(s, "live/"); live != (i < 12) {
			t.Fatalf("include_stale: %s at %d in %v", s, i, got)
		}
	}
}

func TestValidityBadInputChangesNothing(t *testing.T) {
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	_, other := env.Key(t, "w", "q", "agent", memory.RoleWrite)
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "live", Content: "x"})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "gone", Content: "x"})
	if _, err := env.Svc.Forget(ctx, key, service.ForgetRequest{Slug: "gone"}); err != nil {
		t.Fatal(err)
	}
	rememberSim(t, env.Svc, other, service.RememberRequest{Slug: "theirs", Content: "x"})
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "b", Content: "x", Supersedes: []string{"live"}})
	hundred := make([]string, 100)
	for i := range hundred {
		hundred[i] = fmt.Sprintf("s/%d", i)
	}
	now := clock.Now()
	for _, c := range []struct {
		name  string
		req   service.RememberRequest
		code  memory.Code
		names string
	}{
		{"valid_until malformed", service.RememberRequest{ValidUntil: "next tuesday"}, memory.CodeInvalid, "RFC 3339"},
		{"valid_until without zone", service.RememberRequest{ValidUntil: now.Add(time.Hour).Format("2006-01-02T15:04:05")}, memory.CodeInvalid, "RFC 3339"},
		{"valid_until in the past", service.RememberRequest{ValidUntil: now.Add(-time.Minute).Format(time.RFC3339)}, memory.CodeInvalid, "not in the future"},
		{"valid_until over 100 years", service.RememberRequest{ValidUntil: now.AddDate(101, 0, 0).Format(time.RFC3339)}, memory.CodeInvalid, "100 years"},
		{"supersedes itself", service.RememberRequest{Supersedes: []string{"w"}}, memory.CodeInvalid, "itself"},
		{"supersedes a missing slug", service.RememberRequest{Supersedes: []string{"live", "nope"}}, memory.CodeNotFound, "nope"},
		{"supersedes a forgotten slug", service.RememberRequest{Supersedes: []string{"gone"}}, memory.CodeNotFound, "gone"},
		{"supersedes 100 slugs", service.RememberRequest{Supersedes: hundred}, memory.CodeInvalid, "at most"},
		// supersedes names slugs of the written project only: "q/theirs"
		// is a slug of w/p, and w/p has none.
		{"supersedes another project's entry", service.RememberRequest{Supersedes: []string{"q/theirs"}}, memory.CodeNotFound, "q/theirs"},
		{"supersedes another project's slug", service.RememberRequest{Supersedes: []string{"theirs"}}, memory.CodeNotFound, "theirs"},
		{"supersedes twice", service.RememberRequest{Supersedes: []string{"live", "live"}}, memory.CodeInvalid, "twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Slug, c.req.Content = "w", "text"
			_, err := env.Svc.Remember(ctx, key, c.req)
			if memory.ErrorCode(err) != c.code || !strings.Contains(err.Error(), c.names) {
				t.Fatalf("%v, want %s naming %q", err, c.code, c.names)
			}
			if _, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "w"}); memory.ErrorCode(err) != memory.CodeNotFound {
				t.Fatalf("the refused write left an entry: %v", err)
			}
		})
	}
	// A cycle: b supersedes live, so live may not supersede b.
	_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "live", Content: "y", Supersedes: []string{"b"}})
	if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v, want invalid naming the cycle", err)
	}
	if e, _ := env.Svc.Get(ctx, key, service.GetRequest{Slug: "live"}); e.Version != 1 || e.SupersededBy != "b" {
		t.Fatalf("the refused cycle changed live: v%d superseded_by %q", e.Version, e.SupersededBy)
	}
	if e, _ := env.Svc.Get(ctx, other, service.GetRequest{Slug: "theirs"}); e.SupersededBy != "" {
		t.Fatalf("another project's entry was marked superseded by %q", e.SupersededBy)
	}
}

func TestStaleEntriesLeaveTheMeaningPathToo(t *testing.T) {
	emb := servicetest.ConceptEmbedder{{"backup", "backups", "nightly", "snapshots", "offsite", "restore", "disk", "dies", "safe", "data"}}
	env := servicetest.NewMeaning(t, service.Options{}, emb)
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	// Written to the store directly: the vectors of servicetest's meaning
	// path are those of the entries when they are first loaded, and a
	// remember through the service may load them before its own write (the
	// duplicate check of a new slug).
	ref := key.First().Project
	for _, w := range []memory.Write{
		{Slug: "ops/backups-2025", Content: "Nightly backups: snapshots go to tape.", Agent: "agent"},
		{Slug: "ops/backups", Content: "Nightly backups: snapshots are copied offsite.", Agent: "agent", Supersedes: []string{"ops/backups-2025"}},
	} {
		if _, err := env.Store.Append(ctx, ref, w); err != nil {
			t.Fatal(err)
		}
		if err := env.Index.Queue(ref, w.Slug); err != nil {
			t.Fatal(err)
		}
	}
	// In other words than the notes: only the meaning path finds them.
	q := "How do we keep data safe if the disk dies?"
	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: q}), " "); got != "ops/backups" {
		t.Fatalf("recall by meaning: %q, want only ops/backups", got)
	}
	if got := strings.Join(recallSlugs(t, env.Svc, key, service.RecallRequest{Query: q, IncludeStale: true}), " "); got != "ops/backups ops/backups-2025:superseded" {
		t.Fatalf("recall by meaning with include_stale: %q", got)
	}
}

func TestOverlongTimesAreNotRepeated(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	long := strings.Repeat("9", 10_000)
	_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "x", ValidUntil: long})
	if memory.ErrorCode(err) != memory.CodeInvalid || strings.Contains(err.Error(), long[:100]) {
		t.Fatalf("overlong valid_until: %.200v, want invalid without the text", err)
	}
	_, err = env.Svc.List(ctx, key, service.ListRequest{AsOf: long})
	if memory.ErrorCode(err) != memory.CodeInvalid || strings.Contains(err.Error(), long[:100]) {
		t.Fatalf("overlong as_of: %.200v, want invalid without the text", err)
	}
}
