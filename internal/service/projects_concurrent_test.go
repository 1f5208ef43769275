package service_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestManyCallersAcrossProjects: agents that each hold a key for every
// project (in an order of their own) remember into random projects and
// recall across all of them at once. Every write lands in the project it
// named, with that project's agent; every recall finds the caller's last
// write at once, in its project; afterwards every acknowledged version is
// there. Run with -race.
func TestManyCallersAcrossProjects(t *testing.T) {
	const agents, rounds = 8, 15
	projects := []string{"acme/a", "acme/b", "other/c", "other/d"}
	env := servicetest.New(t, service.Options{BudgetOff: true, RecallRate: -1, RecallConcurrency: -1})
	agentOf := func(g int, project string) string {
		return fmt.Sprintf("g%d-%s", g, strings.ReplaceAll(project, "/", "-"))
	}
	callers := make([]memory.Caller, agents)
	for g := range callers {
		tokens := make([]string, len(projects))
		for i := range projects {
			p := projects[(i+g)%len(projects)] // each agent's own first project
			tokens[i] = keyOf(t, env, p, agentOf(g, p), memory.RoleWrite)
		}
		callers[g] = env.Caller(t, tokens...)
	}

	type ack struct {
		project, slug, content string
		version                int
	}
	acks := make([][]ack, agents)
	var wg sync.WaitGroup
	for g, c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range rounds {
				p := projects[rng.IntN(len(projects))]
				slug := fmt.Sprintf("agent%d/n%d", g, rng.IntN(4)) // a few versions each
				word := fmt.Sprintf("tok%dx%d", g, i)
				content := "note " + word + " of " + agentOf(g, p)
				res, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: p, Slug: slug, Content: content})
				if err != nil || res.Project != p {
					t.Errorf("agent %d: remember in %s: %+v, %v", g, p, res, err)
					return
				}
				acks[g] = append(acks[g], ack{project: p, slug: slug, content: content, version: res.Version})
				hits, err := env.Svc.Recall(ctx, c, service.RecallRequest{Query: word})
				if err != nil || len(hits.Hits) != 1 || hits.Hits[0].Project != p || hits.Hits[0].Slug != slug || hits.Hits[0].Version != res.Version {
					t.Errorf("agent %d: recall of its write %s/%s v%d across all projects: %+v, %v", g, p, slug, res.Version, hits, err)
				}
				got, err := env.Svc.Get(ctx, c, service.GetRequest{Project: p, Slug: slug})
				if err != nil || got.Version != res.Version || got.Agent != agentOf(g, p) {
					t.Errorf("agent %d: get %s/%s: %+v, %v; want version %d by %s", g, p, slug, got, err, res.Version, agentOf(g, p))
				}
			}
		}()
	}
	wg.Wait()

	type slugOf struct {
		g             int
		project, slug string
	}
	written := map[slugOf]int{}
	for g, list := range acks {
		if len(list) != rounds {
			t.Errorf("agent %d: %d writes acknowledged, want %d", g, len(list), rounds)
		}
		for _, a := range list {
			v, err := env.Svc.Get(ctx, callers[g], service.GetRequest{Project: a.project, Slug: a.slug, Version: a.version})
			if err != nil || v.Content != a.content || v.Agent != agentOf(g, a.project) {
				t.Errorf("acknowledged %s/%s v%d: %+v, %v", a.project, a.slug, a.version, v, err)
			}
			written[slugOf{g, a.project, a.slug}]++
		}
	}
	// Each slug has as many versions as writes to it were acknowledged: none lost.
	for s, n := range written {
		h, err := env.Svc.History(ctx, callers[s.g], service.HistoryRequest{Project: s.project, Slug: s.slug, Limit: memory.MaxHistoryLimit})
		if err != nil || len(h.Versions) != n || h.Versions[0].Version != n {
			t.Errorf("%s/%s: %d versions (%v), want the %d acknowledged", s.project, s.slug, len(h.Versions), err, n)
		}
	}
}
