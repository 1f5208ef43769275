package service_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// recallEnv: acme/a, acme/b and other/c, which the caller reads with the
// agents ra, rb and rc, and acme/z, which it holds no key for; each holds
// four entries about zebras, the first tagged keep.
type recallEnv struct {
	env      *servicetest.Env
	c        memory.Caller
	projects []string // the caller's, in key order
	agents   map[string]string
}

func newRecallEnv(t *testing.T) *recallEnv {
	t.Helper()
	e := &recallEnv{
		env:      servicetest.New(t, service.Options{RecallRate: -1}),
		projects: []string{"acme/a", "acme/b", "other/c"},
		agents:   map[string]string{"acme/a": "ra", "acme/b": "rb", "other/c": "rc"},
	}
	var tokens []string
	for _, p := range append(slices.Clone(e.projects), "acme/z") {
		w := e.env.Caller(t, keyOf(t, e.env, p, "writer", memory.RoleWrite))
		for i := range 4 {
			var tags []string
			if i == 0 {
				tags = []string{"keep"}
			}
			remember(t, e.env, w, "", fmt.Sprintf("zebra/%d", i), fmt.Sprintf("zebra stripes, note %d of %s", i, p), tags...)
		}
		if agent, ok := e.agents[p]; ok {
			tokens = append(tokens, keyOf(t, e.env, p, agent, memory.RoleRead))
		}
	}
	e.c = e.env.Caller(t, tokens...)
	return e
}

// recall runs a recall of e's caller and checks what every hit must hold:
// a project of the caller's (of want's, when given), the content of that
// project's entry, best first.
func (e *recallEnv) recall(t *testing.T, req service.RecallRequest, want ...string) []service.Hit {
	t.Helper()
	res, err := e.env.Svc.Recall(ctx, e.c, req)
	if err != nil {
		t.Fatalf("recall %+v: %v", req, err)
	}
	if len(want) == 0 {
		want = e.projects
	}
	for i, h := range res.Hits {
		if !slices.Contains(want, h.Project) {
			t.Errorf("recall %+v: hit %s of project %q, want one of %v", req, h.Slug, h.Project, want)
			continue
		}
		if i > 0 && h.Score > res.Hits[i-1].Score {
			t.Errorf("recall %+v: hit %d scores %v, above hit %d's %v", req, i, h.Score, i-1, res.Hits[i-1].Score)
		}
		g, err := e.env.Svc.Get(ctx, e.c, service.GetRequest{Project: h.Project, Slug: h.Slug})
		if err != nil || !strings.HasSuffix(g.Content, " of "+h.Project) || g.Version != h.Version {
			t.Errorf("hit %s/%s is not that project's entry: %+v, %v", h.Project, h.Slug, g, err)
		}
	}
	return res.Hits
}

// perProject counts hits by project.
func perProject(hits []service.Hit) map[string]int {
	n := map[string]int{}
	for _, h := range hits {
		n[h.Project]++
	}
	return n
}

// TestRecallAcrossProjects: without a project a recall searches every
// project of the caller and none other, as one list: limit applies to the
// whole list, tags to every project; with a project, that one only.
func TestRecallAcrossProjects(t *testing.T) {
	e := newRecallEnv(t)
	all := e.recall(t, service.RecallRequest{Query: "zebra", Limit: 50})
	if got := perProject(all); len(all) != 12 || got["acme/a"] != 4 || got["acme/b"] != 4 || got["other/c"] != 4 {
		t.Errorf("recall across all: %d hits %v, want 4 in each of the caller's 3 projects", len(all), got)
	}
	if hits := e.recall(t, service.RecallRequest{Query: "zebra"}); len(hits) != memory.DefaultRecallLimit {
		t.Errorf("default limit: %d hits, want %d of the merged list", len(hits), memory.DefaultRecallLimit)
	}
	top := e.recall(t, service.RecallRequest{Query: "zebra", Limit: 4})
	if len(top) != 4 {
		t.Errorf("limit 4: %d hits", len(top))
	}
	for _, h := range top {
		if h.Score < all[3].Score {
			t.Errorf("limit 4 holds %s/%s scoring %v, below the 4th of the whole list (%v)", h.Project, h.Slug, h.Score, all[3].Score)
		}
	}
	kept := e.recall(t, service.RecallRequest{Query: "zebra", Tags: []string{"keep"}})
	if got := perProject(kept); len(kept) != 3 || got["acme/a"] != 1 || got["acme/b"] != 1 || got["other/c"] != 1 {
		t.Errorf("tag keep: %d hits %v, want zebra/0 of each project", len(kept), got)
	}
	for _, h := range kept {
		if h.Slug != "zebra/0" || !slices.Equal(h.Tags, []string{"keep"}) {
			t.Errorf("tag keep: hit %s/%s tagged %v", h.Project, h.Slug, h.Tags)
		}
	}
	for _, p := range e.projects {
		if hits := e.recall(t, service.RecallRequest{Project: p, Query: "zebra", Limit: 50}, p); len(hits) != 4 {
			t.Errorf("recall in %s: %d hits, want its 4", p, len(hits))
		}
	}
	if hits := e.recall(t, service.RecallRequest{Project: "acme/b", Query: "zebra", Limit: 2}, "acme/b"); len(hits) != 2 {
		t.Errorf("recall in acme/b, limit 2: %d hits", len(hits))
	}
}

// TestRecallAcrossProjectsLogsEachProject: a recall across three projects
// writes one search-log row in each, with that project's agent and hits;
// the project the caller holds no key for gets none; a recall in one
// project logs there only.
func TestRecallAcrossProjectsLogsEachProject(t *testing.T) {
	e := newRecallEnv(t)
	hits := perProject(e.recall(t, service.RecallRequest{Query: "zebra stripes", Limit: 6}))
	e.recall(t, service.RecallRequest{Project: "acme/b", Query: "only in b"}, "acme/b")
	e.env.Svc.FlushSearchLog()
	want := map[string][]string{"acme/a": {"zebra stripes"}, "acme/b": {"only in b", "zebra stripes"}, "other/c": {"zebra stripes"}}
	for _, p := range e.projects {
		ref, _ := memory.ParseProject("project", p)
		rows, err := e.env.Svc.SearchLog(ctx, e.c, ref, memory.LogFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var queries []string
		for _, r := range rows {
			queries = append(queries, r.Query)
			if r.Agent != e.agents[p] || r.Project != ref {
				t.Errorf("%s: row %+v, want agent %s", p, r, e.agents[p])
			}
			if r.Query == "zebra stripes" && r.Hits != hits[p] {
				t.Errorf("%s: row counts %d hits, the recall returned %d there", p, r.Hits, hits[p])
			}
		}
		if !slices.Equal(queries, want[p]) {
			t.Errorf("%s logged %q, want %q", p, queries, want[p])
		}
	}
	if rows, err := e.env.Store.SearchRows(ctx, memory.ProjectRef{Workspace: "acme", Project: "z"}, memory.LogFilter{Limit: 10}); err != nil || len(rows) != 0 {
		t.Errorf("acme/z, which the caller holds no key for, logged %+v, %v", rows, err)
	}
}

// TestEmptyCallerIsRefused: a caller without keys (a transport that forgot
// to authenticate) is unauthorized for every memory call, never a panic.
func TestEmptyCallerIsRefused(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	remember(t, env, env.Caller(t, keyOf(t, env, "acme/a", "ann", memory.RoleWrite)), "", "plans", "plans")
	for name, call := range memoryCalls(env, memory.Caller{}) {
		for _, p := range []string{"", "acme/a"} {
			if err := call(p); memory.ErrorCode(err) != memory.CodeUnauthorized {
				t.Errorf("%s with no key, project %q: %v, want unauthorized", name, p, err)
			}
		}
	}
	if _, err := env.Svc.Search(ctx, memory.Caller{}, memory.ProjectRef{}, memory.SearchQuery{Text: "plans"}); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("web search with no key: %v, want unauthorized", err)
	}
}
