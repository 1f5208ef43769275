package service_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// roleEnv is a server with two projects, acme/alpha with an admin key and
// other/gamma with an admin and a write key, and a server-admin key.
type roleEnv struct {
	env                              *servicetest.Env
	alphaAdmin, gammaAdmin, gammaBot memory.Caller
	gammaToken                       string
	server                           memory.Caller
}

var (
	alpha = memory.ProjectRef{Workspace: "acme", Project: "alpha"}
	gamma = memory.ProjectRef{Workspace: "other", Project: "gamma"}
	nope  = memory.ProjectRef{Workspace: "other", Project: "nope"}
)

func newRoleEnv(t *testing.T, opts service.Options) *roleEnv {
	t.Helper()
	env := servicetest.New(t, opts)
	r := &roleEnv{env: env}
	_, r.alphaAdmin = env.Key(t, "acme", "alpha", "alice", memory.RoleAdmin)
	r.gammaToken, r.gammaAdmin = env.Key(t, "other", "gamma", "gus", memory.RoleAdmin)
	_, r.gammaBot = env.Key(t, "other", "gamma", "bot", memory.RoleWrite)
	if _, err := env.Svc.Remember(ctx, r.gammaBot, service.RememberRequest{Slug: "plans", Content: "gamma's secret plan"}); err != nil {
		t.Fatal(err)
	}
	_, r.server = env.ServerAdmin(t, "ops")
	return r
}

// sameAsMissing checks that errOther (about ref) is the answer errMissing
// (about nope) gives, the project's name aside.
func sameAsMissing(t *testing.T, what string, errOther, errMissing error, ref memory.ProjectRef) {
	t.Helper()
	if memory.ErrorCode(errOther) != memory.CodeNotFound || errMissing == nil ||
		errOther.Error() != strings.ReplaceAll(errMissing.Error(), nope.String(), ref.String()) {
		t.Errorf("%s: %v for an existing project, %v for a missing one; want the same not_found", what, errOther, errMissing)
	}
}

func TestProjectAdminAdministersOnlyItsProject(t *testing.T) {
	r := newRoleEnv(t, service.Options{})
	before, _ := r.env.Svc.ListProjects(ctx)

	keys, err := r.env.Svc.ProjectKeys(ctx, r.alphaAdmin)
	if err != nil || len(keys) != 1 || keys[0].ID != r.alphaAdmin.First().ID {
		t.Fatalf("alpha admin lists %+v, %v; want only its own project's key", keys, err)
	}
	_, _, errOther := r.env.Svc.CreateProjectKey(ctx, r.alphaAdmin, gamma, "mallory", memory.RoleAdmin)
	_, _, errMissing := r.env.Svc.CreateProjectKey(ctx, r.alphaAdmin, nope, "mallory", memory.RoleAdmin)
	sameAsMissing(t, "create a key in another project", errOther, errMissing, gamma)
	errOther = r.env.Svc.RevokeProjectKey(ctx, r.alphaAdmin, r.gammaAdmin.First().ID)
	errMissing = r.env.Svc.RevokeProjectKey(ctx, r.alphaAdmin, 99999)
	if memory.ErrorCode(errOther) != memory.CodeNotFound ||
		errOther.Error() != strings.ReplaceAll(errMissing.Error(), "99999", strconv.FormatInt(r.gammaAdmin.First().ID, 10)) {
		t.Errorf("revoke another project's key: %v; an unknown key: %v; want the same not_found", errOther, errMissing)
	}
	if err := r.env.Svc.RevokeProjectKey(ctx, r.alphaAdmin, r.server.First().ID); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("alpha admin revoking the server-admin key: %v, want not_found", err)
	}
	if _, err := r.env.Svc.Authenticate(ctx, r.gammaToken); err != nil {
		t.Errorf("gamma's admin key stopped working: %v", err)
	}
	if after, _ := r.env.Svc.ListProjects(ctx); len(after) != len(before) {
		t.Errorf("a refused key creation created a project: %d projects, were %d", len(after), len(before))
	}
	if all, _ := r.env.Svc.ListKeys(ctx); len(all) != 4 {
		t.Errorf("%d keys after the refused calls, want 4", len(all))
	}

	// Its own project: a second admin key, then revoke it.
	_, k, err := r.env.Svc.CreateProjectKey(ctx, r.alphaAdmin, alpha, "alice2", memory.RoleAdmin)
	if err != nil || k.Project != alpha {
		t.Fatalf("create an admin key of its own project: %+v, %v", k, err)
	}
	if err := r.env.Svc.RevokeProjectKey(ctx, r.alphaAdmin, k.ID); err != nil {
		t.Errorf("revoke a key of its own project: %v", err)
	}
	if _, err := r.env.Svc.Settings(ctx, r.alphaAdmin, alpha); err != nil {
		t.Errorf("settings of its own project: %v", err)
	}
	if err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", budgetOf(9), nil); err != nil {
		t.Errorf("budget of its own project: %v", err)
	}
}

func TestServerAdminAdministersAllAndReadsNoMemory(t *testing.T) {
	r := newRoleEnv(t, service.Options{})
	keys, err := r.env.Svc.ProjectKeys(ctx, r.server)
	if err != nil || len(keys) != 4 {
		t.Fatalf("server admin lists %d keys, %v; want all 4", len(keys), err)
	}
	projects, err := r.env.Svc.Projects(ctx, r.server)
	if err != nil || len(projects) != 2 || projects[1].Ref != gamma || projects[1].Entries != 1 {
		t.Fatalf("server admin overview = %+v, %v", projects, err)
	}
	// New workspace and project with the first key; a key in another project.
	newRef := memory.ProjectRef{Workspace: "fresh", Project: "one"}
	if _, k, err := r.env.Svc.CreateProjectKey(ctx, r.server, newRef, "starter", memory.RoleAdmin); err != nil || k.Project != newRef {
		t.Fatalf("server admin creates a key in a new project: %+v, %v", k, err)
	}
	if _, _, err := r.env.Svc.CreateProjectKey(ctx, r.server, gamma, "x", memory.RoleServerAdmin); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("a server-admin key made through the browse use cases: %v, want invalid", err)
	}
	if err := r.env.Svc.SetWriteBudgets(ctx, r.server, "other/gamma", budgetOf(11), nil); err != nil {
		t.Errorf("server admin sets gamma's budget: %v", err)
	}
	if err := r.env.Svc.SetWriteBudgets(ctx, r.server, "", budgetOf(11), nil); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("server admin sets the budget of no project: %v, want forbidden", err)
	}
	if err := r.env.Svc.RevokeProjectKey(ctx, r.server, r.gammaBot.First().ID); err != nil {
		t.Errorf("server admin revokes gamma's key: %v", err)
	}

	// Every memory call is refused, naming a project or not, with the same
	// words, and writes nothing.
	const refusal = "forbidden: a server-admin key administers the server; use a project key for memory tools"
	key := r.server
	for _, p := range []string{"", gamma.String()} {
		for name, call := range map[string]func() error{
			"remember": func() error {
				_, err := r.env.Svc.Remember(ctx, key, service.RememberRequest{Project: p, Slug: "plans", Content: "ops was here"})
				return err
			},
			"forget": func() error {
				_, err := r.env.Svc.Forget(ctx, key, service.ForgetRequest{Project: p, Slug: "plans"})
				return err
			},
			"recall": func() error {
				_, err := r.env.Svc.Recall(ctx, key, service.RecallRequest{Project: p, Query: "secret"})
				return err
			},
			"get": func() error {
				_, err := r.env.Svc.Get(ctx, key, service.GetRequest{Project: p, Slug: "plans"})
				return err
			},
			"list": func() error { _, err := r.env.Svc.List(ctx, key, service.ListRequest{Project: p}); return err },
			"history": func() error {
				_, err := r.env.Svc.History(ctx, key, service.HistoryRequest{Project: p, Slug: "plans"})
				return err
			},
			"entries": func() error { _, _, err := r.env.Svc.Entries(ctx, key, gamma, service.EntryQuery{}); return err },
			"audit":   func() error { _, err := r.env.Svc.AuditLog(ctx, key, gamma, memory.LogFilter{}); return err },
			"search log": func() error {
				_, err := r.env.Svc.SearchLog(ctx, key, gamma, memory.LogFilter{})
				return err
			},
			"search": func() error {
				_, err := r.env.Svc.Search(ctx, key, gamma, memory.SearchQuery{Text: "secret"})
				return err
			},
			"missed": func() error { _, err := r.env.Svc.MissedQueries(ctx, key, gamma, time.Time{}, 5); return err },
			"restore": func() error {
				_, err := r.env.Svc.Restore(ctx, key, gamma, "plans", 1)
				return err
			},
		} {
			if err := call(); err == nil || err.Error() != refusal {
				t.Errorf("server admin (project %q) %s: %v, want %q", p, name, err, refusal)
			}
		}
	}
	if h, err := r.env.Svc.History(ctx, r.gammaAdmin, service.HistoryRequest{Slug: "plans"}); err != nil || len(h.Versions) != 1 {
		t.Errorf("gamma's entry has %d versions (%v), want 1", len(h.Versions), err)
	}
}

func TestReadAndWriteKeysAdministerNothing(t *testing.T) {
	r := newRoleEnv(t, service.Options{})
	_, reader := r.env.Key(t, "other", "gamma", "reader", memory.RoleRead)
	for _, key := range []memory.Caller{reader, r.gammaBot} {
		if _, err := r.env.Svc.ProjectKeys(ctx, key); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key lists keys: %v", key.First().Role, err)
		}
		if _, _, err := r.env.Svc.CreateProjectKey(ctx, key, gamma, "x", memory.RoleRead); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key creates a key: %v", key.First().Role, err)
		}
		if err := r.env.Svc.RevokeProjectKey(ctx, key, r.gammaAdmin.First().ID); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key revokes a key: %v", key.First().Role, err)
		}
		if _, err := r.env.Svc.Settings(ctx, key, gamma); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key opens settings: %v", key.First().Role, err)
		}
		if err := r.env.Svc.SetWriteBudgets(ctx, key, "", budgetOf(3), nil); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key sets the budget: %v", key.First().Role, err)
		}
		if projects, err := r.env.Svc.Projects(ctx, key); err != nil || len(projects) != 1 || projects[0].Ref != gamma {
			t.Errorf("%s key's overview: %+v, %v; want its own project only", key.First().Role, projects, err)
		}
	}
	if _, err := r.env.Svc.Authenticate(ctx, r.gammaToken); err != nil {
		t.Errorf("gamma's admin key stopped working: %v", err)
	}
}
