package service_test

import (
	"fmt"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// pendingSlugs returns the slugs of hits, failing the test on a hit that is
// not marked pending.
func pendingSlugs(t *testing.T, hits []service.Hit) []string {
	t.Helper()
	var slugs []string
	for _, h := range hits {
		if h.State != memory.ProposalPending {
			t.Errorf("hit %+v is not marked pending", h)
		}
		slugs = append(slugs, h.Slug)
	}
	return slugs
}

// TestPendingRecallKeepsTheLimit: the proposer's own pending proposals come
// newest first and within the recall's limit — the default one when the
// recall names none, the one it names otherwise.
func TestPendingRecallKeepsTheLimit(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	n := memory.DefaultRecallLimit + 2
	for i := range n {
		r.proposeNote(t, fmt.Sprintf("n/%d", i), fmt.Sprintf("zeppelin note %d", i))
	}
	var newest []string
	for i := n - 1; i >= 0; i-- {
		newest = append(newest, fmt.Sprintf("n/%d", i))
	}
	for _, c := range []struct {
		limit, want int
	}{{0, memory.DefaultRecallLimit}, {3, 3}, {memory.MaxRecallLimit, n}} {
		got, err := r.env.Svc.Recall(ctx, r.pia, service.RecallRequest{Query: "zeppelin", Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		if slugs := pendingSlugs(t, got.Hits); fmt.Sprint(slugs) != fmt.Sprint(newest[:c.want]) {
			t.Errorf("limit %d: pia's recall found %v, want %v", c.limit, slugs, newest[:c.want])
		}
	}
	if _, err := r.env.Svc.Recall(ctx, r.pia, service.RecallRequest{Query: "zeppelin", Limit: memory.MaxRecallLimit + 1}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("limit above the maximum: %v, want invalid", err)
	}
}

// TestPendingRecallAcrossProjects: a recall across the caller's projects
// shows its pending proposals of all of them newest first, whichever
// project each is in; a proposal without the recall's tags is left out.
func TestPendingRecallAcrossProjects(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	one, _ := env.Key(t, "acme", "one", "pia", memory.RolePropose)
	two, _ := env.Key(t, "acme", "two", "pia", memory.RolePropose)
	pia := env.Caller(t, one, two)
	for _, p := range []struct{ project, slug string }{{"acme/one", "a"}, {"acme/two", "b"}, {"acme/one", "c"}, {"acme/two", "d"}} {
		res, err := env.Svc.Remember(ctx, pia, service.RememberRequest{Project: p.project, Slug: p.slug,
			Content: "the zeppelin hangar, note " + p.slug, Tags: []string{"hangar", p.slug}})
		if err != nil || res.State != memory.ProposalPending {
			t.Fatalf("pia proposes %s in %s: %+v, %v", p.slug, p.project, res, err)
		}
	}
	got, err := env.Svc.Recall(ctx, pia, service.RecallRequest{Query: "zeppelin"})
	if err != nil {
		t.Fatal(err)
	}
	if slugs := pendingSlugs(t, got.Hits); fmt.Sprint(slugs) != "[d c b a]" {
		t.Errorf("pia's recall across its projects found %v, want [d c b a] (newest first)", slugs)
	}
	got, err = env.Svc.Recall(ctx, pia, service.RecallRequest{Query: "zeppelin", Tags: []string{"hangar", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if slugs := pendingSlugs(t, got.Hits); fmt.Sprint(slugs) != "[c]" {
		t.Errorf("pia's recall with tags hangar and c found %v, want [c]", slugs)
	}
}
