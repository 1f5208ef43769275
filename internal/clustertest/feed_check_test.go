//go:build cluster

package clustertest

import (
	"context"
	"testing"
	"time"
)

// feedFixture is a small run: two entries of one project, a proposal
// approved and one rejected, each call answered before the next was sent.
func feedFixture() ([]ack, []proposalAck, []decisionAck, []feedChange) {
	t0 := time.Now() // only the order of the times matters
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	const pr = "bereich-0/p"
	acks := []ack{
		{project: pr, slug: "a/s0", version: 1, agent: "a", sent: at(0), done: at(1)},
		{project: pr, slug: "a/s1", version: 1, agent: "a", sent: at(2), done: at(3)},
		{project: pr, slug: "a/s0", version: 2, agent: "a", sent: at(4), done: at(5)},
	}
	p1 := proposalAck{project: pr, id: "bereich-0.p.1", slug: "v/s0", agent: "v", sent: at(6), done: at(7)}
	p2 := proposalAck{project: pr, id: "bereich-0.p.2", slug: "v/s0", agent: "v", sent: at(8), done: at(9)}
	decs := []decisionAck{
		{proposal: p1, approved: true, version: 1, reviewer: "g", sent: at(10), done: at(11)},
		{proposal: p2, reviewer: "g", sent: at(12), done: at(13)},
	}
	got := []feedChange{
		{Project: pr, Slug: "a/s0", Version: 1, Agent: "a", Kind: "remember"},
		{Project: pr, Slug: "a/s1", Version: 1, Agent: "a", Kind: "remember"},
		// an unacknowledged write (its answer was lost) may appear
		{Project: pr, Slug: "a/s1", Version: 2, Agent: "a", Kind: "remember"},
		{Project: pr, Slug: "a/s0", Version: 2, Agent: "a", Kind: "remember"},
		{Project: pr, Slug: "v/s0", Agent: "v", Kind: "propose", Proposal: "bereich-0.p.1"},
		{Project: pr, Slug: "v/s0", Agent: "v", Kind: "propose", Proposal: "bereich-0.p.2"},
		{Project: pr, Slug: "v/s0", Version: 1, Agent: "g", Kind: "approve", Proposal: "bereich-0.p.1"},
		{Project: pr, Slug: "v/s0", Agent: "g", Kind: "reject", Proposal: "bereich-0.p.2"},
	}
	return acks, props(p1, p2), decs, got
}

func props(ps ...proposalAck) []proposalAck { return ps }

// TestCheckFeed: the complete feed passes; each kind of damage is found by
// its counter.
func TestCheckFeed(t *testing.T) {
	projects := map[string]bool{"bereich-0/p": true}
	acks, ps, decs, good := feedFixture()
	readOnly := func(got []feedChange) []feedChange {
		var out []feedChange
		for _, ch := range got {
			if ch.Kind != "propose" && ch.Kind != "reject" {
				out = append(out, ch)
			}
		}
		return out
	}
	cases := []struct {
		name   string
		role   string
		edit   func([]feedChange) []feedChange
		counts func(*feedVerdict) int // the counter that must be 1 (nil: all 0)
	}{
		{"vollständig", "admin", func(g []feedChange) []feedChange { return g }, nil},
		{"vollständig, read", "read", readOnly, nil},
		{"fehlt", "admin", func(g []feedChange) []feedChange { return append(g[:3:3], g[4:]...) },
			func(v *feedVerdict) int { return v.missing }},
		{"Vorschlag fehlt", "admin", func(g []feedChange) []feedChange { return append(g[:5:5], g[6:]...) },
			func(v *feedVerdict) int { return v.missing }},
		{"doppelt", "admin", func(g []feedChange) []feedChange { return append(g[:2:2], append([]feedChange{g[1]}, g[2:]...)...) },
			func(v *feedVerdict) int { return v.twice + v.disorder - 1 }}, // a repeated version is also not above the previous
		{"Fassungen vertauscht", "admin", func(g []feedChange) []feedChange {
			g = append([]feedChange(nil), g...)
			g[0], g[3] = g[3], g[0]
			return g
		}, func(v *feedVerdict) int { return min(v.disorder, 1) }},
		{"Bestätigungsreihenfolge", "admin", func(g []feedChange) []feedChange {
			g = append([]feedChange(nil), g...)
			g[0], g[1] = g[1], g[0] // a/s1 v1 was sent after a/s0 v1 was answered
			return g
		}, func(v *feedVerdict) int { return v.disorder }},
		{"sichtbar für read", "read", func(g []feedChange) []feedChange { return append(readOnly(g), g[4]) },
			func(v *feedVerdict) int { return v.hidden }},
		{"falscher Agent", "admin", func(g []feedChange) []feedChange {
			g = append([]feedChange(nil), g...)
			g[6].Agent = "v"
			return g
		}, func(v *feedVerdict) int { return v.wrong }},
		{"fremdes Projekt", "admin", func(g []feedChange) []feedChange {
			return append(append([]feedChange(nil), g...), feedChange{Project: "bereich-9/p", Slug: "x", Version: 1, Kind: "remember"})
		}, func(v *feedVerdict) int { return v.wrong }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := expectedItems(acks, ps, decs, projects, tc.role == "admin")
			v := checkFeed("abo", tc.role, tc.edit(append([]feedChange(nil), good...)), items, projects)
			total := v.missing + v.twice + v.disorder + v.wrong + v.hidden
			if tc.counts == nil {
				if total != 0 || v.found != len(items) {
					t.Fatalf("found %d of %d, problems %v", v.found, len(items), v.problems)
				}
				return
			}
			if got := tc.counts(v); got != 1 {
				t.Fatalf("counter %d, want 1; problems %v", got, v.problems)
			}
		})
	}
}

// fixedLatest answers every entry's latest version from a map.
type fixedLatest map[slugRef]int

func (f fixedLatest) get(_ context.Context, project, slug string, _ int) (string, int, int, bool, error) {
	l, ok := f[slugRef{project, slug}]
	return "", l, l, ok, nil
}

// TestCheckPhantoms: a version above the cluster's latest is counted, one
// at or below is not.
func TestCheckPhantoms(t *testing.T) {
	feeds := [][]feedChange{{
		{Project: "b/p", Slug: "x", Version: 1, Kind: "remember"},
		{Project: "b/p", Slug: "x", Version: 2, Kind: "remember"},
		{Project: "b/p", Slug: "x", Version: 3, Kind: "remember"},
		{Project: "b/p", Slug: "y", Kind: "propose", Proposal: "b.p.1"},
	}}
	vs := []*feedVerdict{{name: "abo"}}
	checkPhantoms(context.Background(), fixedLatest{{"b/p", "x"}: 2}, feeds, vs, 2)
	if vs[0].phantom != 1 {
		t.Fatalf("phantom %d, want 1: %v", vs[0].phantom, vs[0].problems)
	}
}
