//go:build cluster

package clustertest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// fakeReview serves proposals and versions from maps: the cases a real
// cluster cannot be made to show (a lost proposal, an approval applied
// twice).
type fakeReview struct {
	props map[string][]proposalView
	vs    map[slugRef]map[int]entryVersion
}

func (f fakeReview) proposals(_ context.Context, project string) ([]proposalView, error) {
	return f.props[project], nil
}

func (f fakeReview) versions(_ context.Context, project, slug string) (map[int]entryVersion, error) {
	return f.vs[slugRef{project, slug}], nil
}

// reviewCase is the state a correct run leaves: proposal 1 approved as
// version 2 of s (version 1 is proposal 3's, approved earlier), 2 rejected,
// 4 pending; the acks say so.
func reviewCase() (fakeReview, []proposalAck, []decisionAck) {
	f := fakeReview{
		props: map[string][]proposalView{"w/p": {
			{ID: "w.p.1", Slug: "s", Agent: "v", Content: "eins", BaseVersion: 0, State: "approved", DecidedBy: "g", Version: 2},
			{ID: "w.p.2", Slug: "s", Agent: "v", Content: "zwei", BaseVersion: 0, State: "rejected", DecidedBy: "g", Reason: "nein"},
			{ID: "w.p.3", Slug: "s", Agent: "v", Content: "drei", BaseVersion: 0, State: "approved", DecidedBy: "g", Version: 1},
			{ID: "w.p.4", Slug: "s", Agent: "v", Content: "vier", BaseVersion: 2, State: "pending"},
		}},
		vs: map[slugRef]map[int]entryVersion{{"w/p", "s"}: {1: {"drei", "v"}, 2: {"eins", "v"}}},
	}
	props := []proposalAck{
		{project: "w/p", id: "w.p.1", slug: "s", content: "eins", agent: "v", node: 1},
		{project: "w/p", id: "w.p.2", slug: "s", content: "zwei", agent: "v", node: 1},
		{project: "w/p", id: "w.p.4", slug: "s", content: "vier", agent: "v", base: 2, node: 1},
	}
	decs := []decisionAck{
		{proposal: props[0], approved: true, version: 2, reviewer: "g", node: 2, forwarded: true},
		{proposal: props[1], reason: "nein", reviewer: "g", node: 0},
	}
	return f, props, decs
}

func TestVerifyReview(t *testing.T) {
	ctx := context.Background()
	f, props, decs := reviewCase()
	if v := verifyReview(ctx, f, []string{"w/p"}, props, decs); v.lost+v.twice+v.missing+v.leaked+v.gaps != 0 || v.listed != 4 || v.entries != 1 {
		t.Fatalf("a correct state: %+v", v)
	}
	for _, c := range []struct {
		name   string
		change func(f *fakeReview, props []proposalAck, decs []decisionAck) ([]proposalAck, []decisionAck)
		want   func(v *reviewVerdict) bool
	}{
		{"an acknowledged proposal is gone", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.props["w/p"] = f.props["w/p"][:3]
			return p, d
		}, func(v *reviewVerdict) bool { return v.lost == 1 }},
		{"a proposal with other content", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			p[2].content = "fünf"
			return p, d
		}, func(v *reviewVerdict) bool { return v.lost == 1 }},
		{"an acknowledged approval is pending again", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.props["w/p"][0].State, f.props["w/p"][0].Version = "pending", 0
			return p, d
		}, func(v *reviewVerdict) bool { return v.lost == 1 && v.leaked == 1 }},
		{"an acknowledged rejection is pending again", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.props["w/p"][1].State = "pending"
			return p, d
		}, func(v *reviewVerdict) bool { return v.lost == 1 }},
		{"an approval applied twice", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.vs[slugRef{"w/p", "s"}][3] = entryVersion{"eins", "v"}
			return p, d
		}, func(v *reviewVerdict) bool { return v.twice == 1 }},
		{"an approval without its version", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.vs[slugRef{"w/p", "s"}][2] = entryVersion{"anders", "v"}
			return p, d
		}, func(v *reviewVerdict) bool { return v.missing == 1 }},
		{"an approved version by another agent", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.vs[slugRef{"w/p", "s"}][2] = entryVersion{"eins", "g"}
			return p, d
		}, func(v *reviewVerdict) bool { return v.missing == 1 }},
		{"a rejected proposal is a version", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.vs[slugRef{"w/p", "s"}][3] = entryVersion{"zwei", "v"}
			return p, d
		}, func(v *reviewVerdict) bool { return v.leaked == 1 }},
		{"a gap", func(f *fakeReview, p []proposalAck, d []decisionAck) ([]proposalAck, []decisionAck) {
			f.vs[slugRef{"w/p", "s"}][4] = entryVersion{"x", "v"}
			return p, d
		}, func(v *reviewVerdict) bool { return v.gaps == 1 }},
	} {
		f, props, decs := reviewCase()
		props, decs = c.change(&f, props, decs)
		if v := verifyReview(ctx, f, []string{"w/p"}, props, decs); !c.want(v) {
			t.Errorf("%s: lost %d, twice %d, missing %d, leaked %d, gaps %d: %v", c.name, v.lost, v.twice, v.missing, v.leaked, v.gaps, v.problems)
		}
	}
}

// The replica's proposals table is compared with the acks the same way.
func TestCompareStoredProposals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE proposals (id INTEGER PRIMARY KEY, slug TEXT, agent TEXT, content TEXT, base_version INTEGER,
		state TEXT, decided_by TEXT, reason TEXT NOT NULL DEFAULT '', version INTEGER);
		INSERT INTO proposals VALUES (1, 's', 'v', 'eins', 0, 'approved', 'g', '', 2), (2, 's', 'v', 'zwei', 0, 'rejected', 'g', 'nein', NULL),
			(4, 's', 'v', 'vier', 2, 'pending', NULL, '', NULL)`); err != nil {
		t.Fatal(err)
	}
	s, err := readStoredProposals(path)
	if err != nil || len(s) != 3 {
		t.Fatalf("read %d proposals: %v", len(s), err)
	}
	_, props, decs := reviewCase()
	v := &verdict{}
	compareStoredProposals(s, props, decs, v)
	if v.lost != 0 || v.acks != 5 {
		t.Fatalf("a file that holds every ack: %+v", v)
	}
	delete(s, 4)
	s[1] = storedProposal{slug: "s", agent: "v", content: "eins", state: "pending"}
	v = &verdict{}
	compareStoredProposals(s, props, decs, v)
	if v.lost != 2 {
		t.Fatalf("a file without proposal 4 and with 1 pending: lost %d, want 2: %v", v.lost, v.problems)
	}
}

// decisionCounts and checkReview's "proved too little": a run without a
// forwarded approval or with a decision through the proposal's own node
// fails.
func TestDecisionCounts(t *testing.T) {
	_, props, decs := reviewCase()
	approved, rejected, forwarded, elsewhere, known := decisionCounts(props, decs)
	if approved != 1 || rejected != 1 || forwarded != 1 || elsewhere != 2 || known != 2 {
		t.Fatalf("counts %d %d %d %d %d", approved, rejected, forwarded, elsewhere, known)
	}
	decs[1].node = 1 // through the node the proposal came by
	if _, _, _, elsewhere, known := decisionCounts(props, decs); elsewhere != 1 || known != 2 {
		t.Fatalf("a decision through the proposal's node: elsewhere %d of %d", elsewhere, known)
	}
}

func TestPendingOf(t *testing.T) {
	w, err := pendingOf(map[string]any{"state": "pending", "proposal": "w.p.3", "base_version": 2.0})
	if err != nil || w.proposal != "w.p.3" || w.base != 2 {
		t.Fatalf("pending answer: %+v %v", w, err)
	}
	for _, m := range []map[string]any{
		{"version": 3.0},
		{"state": "pending", "proposal": "w.p.3"},
		{"state": "pending", "base_version": 0.0},
		{"state": "pending", "proposal": "w.p.3", "base_version": 0.0, "version": 1.0},
	} {
		if _, err := pendingOf(m); err == nil {
			t.Errorf("%v read as a pending proposal", m)
		}
	}
	if projectOfID("bereich-1.p.17") != "bereich-1/p" || proposalNumber("bereich-1.p.17") != 17 || projectOfID("x") != "" {
		t.Error("proposal ids not parsed")
	}
}
