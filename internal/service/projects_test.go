package service_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// keyOf creates a key for agent with role in project ("workspace/project")
// and returns its token.
func keyOf(t *testing.T, env *servicetest.Env, project, agent string, role memory.Role) string {
	t.Helper()
	ref, err := memory.ParseProject("project", project)
	if err != nil {
		t.Fatal(err)
	}
	token, _ := env.Key(t, ref.Workspace, ref.Project, agent, role)
	return token
}

// remember writes content to slug in project for c and fails the test on an error.
func remember(t *testing.T, env *servicetest.Env, c memory.Caller, project, slug, content string, tags ...string) service.WriteResult {
	t.Helper()
	res, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: project, Slug: slug, Content: content, Tags: tags})
	if err != nil {
		t.Fatalf("remember %s in %q: %v", slug, project, err)
	}
	return res
}

// memoryCalls are the memory calls of c, each acting in the project it is given.
func memoryCalls(env *servicetest.Env, c memory.Caller) map[string]func(project string) error {
	svc := env.Svc
	return map[string]func(string) error{
		"remember": func(p string) error {
			_, err := svc.Remember(ctx, c, service.RememberRequest{Project: p, Slug: "plans", Content: "mine now"})
			return err
		},
		"forget": func(p string) error {
			_, err := svc.Forget(ctx, c, service.ForgetRequest{Project: p, Slug: "plans"})
			return err
		},
		"get": func(p string) error {
			_, err := svc.Get(ctx, c, service.GetRequest{Project: p, Slug: "plans"})
			return err
		},
		"list": func(p string) error {
			_, err := svc.List(ctx, c, service.ListRequest{Project: p})
			return err
		},
		"history": func(p string) error {
			_, err := svc.History(ctx, c, service.HistoryRequest{Project: p, Slug: "plans"})
			return err
		},
		"recall": func(p string) error {
			_, err := svc.Recall(ctx, c, service.RecallRequest{Project: p, Query: "plans"})
			return err
		},
		"budget": func(p string) error {
			return svc.SetWriteBudgets(ctx, c, p, budgetOf(5), nil)
		},
	}
}

// TestProjectDefaultsToFirstKey: without a project, every call but recall
// acts in the first key's project; with one, in that project; every answer
// names the project it acted in.
func TestProjectDefaultsToFirstKey(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	ta := keyOf(t, env, "acme/a", "ann", memory.RoleAdmin)
	tb := keyOf(t, env, "acme/b", "bea", memory.RoleWrite)
	c := env.Caller(t, ta, tb)

	if res := remember(t, env, c, "", "s", "in a"); res.Project != "acme/a" || res.Version != 1 {
		t.Errorf("remember without project: %+v, want acme/a version 1", res)
	}
	if res := remember(t, env, c, "acme/b", "s", "in b"); res.Project != "acme/b" || res.Version != 1 {
		t.Errorf("remember in acme/b: %+v, want acme/b version 1", res)
	}
	if res := remember(t, env, env.Caller(t, ta), "acme/a", "s", "in a again"); res.Project != "acme/a" || res.Version != 2 {
		t.Errorf("one key naming its own project: %+v, want acme/a version 2", res)
	}
	for _, tc := range []struct {
		caller               memory.Caller
		project, want, agent string
	}{
		{c, "", "acme/a", "ann"},
		{c, "acme/a", "acme/a", "ann"},
		{c, "acme/b", "acme/b", "bea"},
		{env.Caller(t, tb, ta), "", "acme/b", "bea"},
	} {
		g, err := env.Svc.Get(ctx, tc.caller, service.GetRequest{Project: tc.project, Slug: "s"})
		if err != nil || g.Project != tc.want || g.Agent != tc.agent || !strings.HasPrefix(g.Content, "in "+tc.want[len(tc.want)-1:]) {
			t.Errorf("get in %q (first key %s): %+v, %v; want %s's entry", tc.project, tc.caller.First().Project, g, err, tc.want)
		}
		l, err := env.Svc.List(ctx, tc.caller, service.ListRequest{Project: tc.project})
		if err != nil || len(l.Entries) != 1 || l.Entries[0].Project != tc.want {
			t.Errorf("list in %q: %+v, %v; want one entry of %s", tc.project, l, err, tc.want)
		}
		h, err := env.Svc.History(ctx, tc.caller, service.HistoryRequest{Project: tc.project, Slug: "s"})
		if err != nil || h.Project != tc.want || h.Versions[0].Agent != tc.agent {
			t.Errorf("history in %q: %+v, %v; want %s by %s", tc.project, h, err, tc.want, tc.agent)
		}
	}
	if err := env.Svc.SetWriteBudgets(ctx, c, "", budgetOf(7), nil); err != nil {
		t.Errorf("budget without project (admin of the first project): %v", err)
	}
	if _, limit, _ := env.Svc.WriteUsage(ctx, memory.ProjectRef{Workspace: "acme", Project: "a"}); limit != 7 {
		t.Errorf("acme/a's budget %d, want 7", limit)
	}
	if res, err := env.Svc.Forget(ctx, c, service.ForgetRequest{Slug: "s"}); err != nil || res.Project != "acme/a" {
		t.Errorf("forget without project: %+v, %v", res, err)
	}
	if _, err := env.Svc.Get(ctx, c, service.GetRequest{Project: "acme/b", Slug: "s"}); err != nil {
		t.Errorf("forget without project touched acme/b: %v", err)
	}
}

// TestProjectWithoutKeyIsForbidden: a project the caller holds no key for
// is refused by every call in the same words whether it exists or not, and
// nothing changes there.
func TestProjectWithoutKeyIsForbidden(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	ta := keyOf(t, env, "acme/a", "ann", memory.RoleAdmin)
	tb := keyOf(t, env, "acme/b", "bea", memory.RoleWrite)
	tx := keyOf(t, env, "acme/x", "xavier", memory.RoleWrite)
	owner := env.Caller(t, tx)
	remember(t, env, owner, "", "plans", "x's secret plan")
	before, _ := env.Svc.ListProjects(ctx)

	for _, c := range []memory.Caller{env.Caller(t, ta), env.Caller(t, ta, tb), env.Caller(t, tb, ta)} {
		for name, call := range memoryCalls(env, c) {
			errX, errNope := call("acme/x"), call("acme/nope")
			if errX == nil || errX.Error() != "forbidden: no key for project acme/x" ||
				errNope == nil || errNope.Error() != "forbidden: no key for project acme/nope" {
				t.Errorf("%d keys, %s in a project without a key: %v (it exists), %v (it does not); want the same forbidden", len(c.Keys()), name, errX, errNope)
			}
		}
	}
	if h, err := env.Svc.History(ctx, owner, service.HistoryRequest{Slug: "plans"}); err != nil || len(h.Versions) != 1 {
		t.Errorf("acme/x's entry after the refused calls: %+v, %v; want its one version", h, err)
	}
	if _, limit, _ := env.Svc.WriteUsage(ctx, memory.ProjectRef{Workspace: "acme", Project: "x"}); limit != memory.DefaultWriteBudget {
		t.Errorf("acme/x's budget is %d after refused calls", limit)
	}
	if after, _ := env.Svc.ListProjects(ctx); len(after) != len(before) {
		t.Errorf("refused calls created projects: %d, were %d", len(after), len(before))
	}
}

// TestMalformedProjectIsInvalid: a project that is not "workspace/project"
// of two valid names is invalid, naming the field, for every call; nothing
// is written anywhere.
func TestMalformedProjectIsInvalid(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	c := env.Caller(t, keyOf(t, env, "acme/a", "ann", memory.RoleAdmin), keyOf(t, env, "acme/b", "bea", memory.RoleWrite))
	before, _ := env.Svc.ListProjects(ctx)
	for _, p := range []string{"ACME/x", "Acme/A", "a", "a/b/c", strings.Repeat("a", 200), "acme/a/", "/acme/a", " acme/a", "acme/a ", "acme/../b", "../acme/a", "acme/a\n", "acme/a,acme/b"} {
		for name, call := range memoryCalls(env, c) {
			err := call(p)
			if memory.ErrorCode(err) != memory.CodeInvalid || !strings.HasPrefix(err.Error(), `invalid: project "`) {
				t.Errorf("%s with project %q: %v, want invalid naming the field project", name, p, err)
			}
		}
	}
	if after, _ := env.Svc.ListProjects(ctx); len(after) != len(before) {
		t.Errorf("calls with a malformed project created projects: %d, were %d", len(after), len(before))
	}
	for _, p := range []string{"acme/a", "acme/b"} {
		if l, err := env.Svc.List(ctx, c, service.ListRequest{Project: p}); err != nil || len(l.Entries) != 0 {
			t.Errorf("%s after the refused calls: %+v, %v; want empty", p, l, err)
		}
	}
}

// TestRolesArePerProject: a read key for acme/a and a write key for acme/b
// write acme/b only; a write is recorded with the agent of the target
// project's key.
func TestRolesArePerProject(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	remember(t, env, env.Caller(t, keyOf(t, env, "acme/a", "seed", memory.RoleWrite)), "", "plans", "a's plans")
	c := env.Caller(t, keyOf(t, env, "acme/a", "reader-a", memory.RoleRead), keyOf(t, env, "acme/b", "writer-b", memory.RoleWrite))

	if res := remember(t, env, c, "acme/b", "plans", "b's plans"); res.Project != "acme/b" {
		t.Errorf("write into acme/b: %+v", res)
	}
	if g, err := env.Svc.Get(ctx, c, service.GetRequest{Project: "acme/b", Slug: "plans"}); err != nil || g.Agent != "writer-b" {
		t.Errorf("acme/b's entry: %+v, %v; want agent writer-b", g, err)
	}
	const refusal = "forbidden: key of reader-a has role read and cannot "
	for _, p := range []string{"", "acme/a"} {
		_, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: p, Slug: "plans", Content: "overwritten"})
		if err == nil || err.Error() != refusal+"remember" {
			t.Errorf("remember in %q: %v, want %q", p, err, refusal+"remember")
		}
		_, err = env.Svc.Forget(ctx, c, service.ForgetRequest{Project: p, Slug: "plans"})
		if err == nil || err.Error() != refusal+"forget" {
			t.Errorf("forget in %q: %v, want %q", p, err, refusal+"forget")
		}
		if err := env.Svc.SetWriteBudgets(ctx, c, p, budgetOf(5), nil); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("budget of %q: %v, want forbidden", p, err)
		}
	}
	if g, err := env.Svc.Get(ctx, c, service.GetRequest{Slug: "plans"}); err != nil || g.Version != 1 || g.Agent != "seed" {
		t.Errorf("acme/a read through the read key: %+v, %v; want seed's version 1", g, err)
	}
	if err := env.Svc.SetWriteBudgets(ctx, c, "acme/b", budgetOf(5), nil); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("a write key sets acme/b's budget: %v, want forbidden", err)
	}
}

// TestHigherRoleWinsForOneProject: of two keys for one project the higher
// role decides, in either order, and its agent is recorded with the write.
func TestHigherRoleWinsForOneProject(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	r := keyOf(t, env, "acme/a", "reader", memory.RoleRead)
	w := keyOf(t, env, "acme/a", "writer", memory.RoleWrite)
	adm := keyOf(t, env, "acme/a", "boss", memory.RoleAdmin)
	other := keyOf(t, env, "acme/b", "bea", memory.RoleRead)
	for i, order := range [][]string{{r, w}, {w, r}, {other, r, w}, {other, w, r}} {
		c := env.Caller(t, order...)
		res := remember(t, env, c, "acme/a", "s", "write")
		if res.Version != i+1 {
			t.Errorf("order %d: version %d, want %d", i, res.Version, i+1)
		}
		h, err := env.Svc.History(ctx, c, service.HistoryRequest{Project: "acme/a", Slug: "s", Limit: 1})
		if err != nil || h.Versions[0].Agent != "writer" {
			t.Errorf("order %d: history %+v, %v; want the write by writer", i, h, err)
		}
		if err := env.Svc.SetWriteBudgets(ctx, c, "acme/a", budgetOf(5), nil); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("order %d: a write key sets the budget: %v, want forbidden", i, err)
		}
	}
	for _, order := range [][]string{{w, adm}, {adm, w}, {r, adm, w}} {
		if err := env.Svc.SetWriteBudgets(ctx, env.Caller(t, order...), "acme/a", budgetOf(5), nil); err != nil {
			t.Errorf("with the admin key among %d: %v", len(order), err)
		}
	}
}

// TestWriteRecordsTheTargetProjectsAgent: the agent of a write, in the
// version and the audit log, is the one of the caller's key for the project
// written, not of its first key.
func TestWriteRecordsTheTargetProjectsAgent(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	c := env.Caller(t,
		keyOf(t, env, "acme/a", "ann", memory.RoleWrite),
		keyOf(t, env, "acme/b", "bea", memory.RoleWrite),
		keyOf(t, env, "other/c", "cat", memory.RoleAdmin))
	for _, tc := range []struct{ project, agent string }{{"acme/b", "bea"}, {"other/c", "cat"}, {"", "ann"}} {
		remember(t, env, c, tc.project, "who", "written by "+tc.agent)
		if _, err := env.Svc.Forget(ctx, c, service.ForgetRequest{Project: tc.project, Slug: "who"}); err != nil {
			t.Fatal(err)
		}
		h, err := env.Svc.History(ctx, c, service.HistoryRequest{Project: tc.project, Slug: "who"})
		if err != nil || len(h.Versions) != 2 || h.Versions[0].Agent != tc.agent || h.Versions[1].Agent != tc.agent {
			t.Errorf("history in %q: %+v, %v; want remember and forget by %s", tc.project, h, err, tc.agent)
		}
		ref := c.First().Project
		if tc.project != "" {
			ref, _ = memory.ParseProject("project", tc.project)
		}
		rows, err := env.Store.AuditRows(ctx, ref, memory.LogFilter{Limit: 10})
		if err != nil || len(rows) != 2 || rows[0].Agent != tc.agent || rows[1].Agent != tc.agent {
			t.Errorf("audit log of %s: %+v, %v; want two rows by %s", ref, rows, err, tc.agent)
		}
	}
}

// TestWriteBudgetIsPerProjectOfOneCaller: a caller that used up one
// project's budget still writes to its other projects.
func TestWriteBudgetIsPerProjectOfOneCaller(t *testing.T) {
	at := servicetest.FutureHour().Add(15 * time.Minute) // no new hour mid-test
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 2, Now: func() time.Time { return at }})
	c := env.Caller(t, keyOf(t, env, "acme/a", "ann", memory.RoleWrite), keyOf(t, env, "acme/b", "bea", memory.RoleWrite))
	remember(t, env, c, "", "s", "one")
	remember(t, env, c, "acme/a", "s", "two")
	for _, p := range []string{"", "acme/a"} {
		if _, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: p, Slug: "s", Content: "three"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
			t.Fatalf("third write to acme/a (project %q): %v, want budget_exhausted", p, err)
		}
	}
	remember(t, env, c, "acme/b", "s", "one")
	remember(t, env, c, "acme/b", "s", "two")
	for _, ref := range []memory.ProjectRef{{Workspace: "acme", Project: "a"}, {Workspace: "acme", Project: "b"}} {
		if used, limit, err := env.Svc.WriteUsage(ctx, ref); err != nil || used != 2 || limit != 2 {
			t.Errorf("%s used %d of %d (%v), want 2 of 2", ref, used, limit, err)
		}
	}
}

// TestCursorsAndSlugsStayInTheCallersProjects: a list cursor carries no
// project: used with a project the caller holds no key for it is
// forbidden, and with another of its projects it pages that project only;
// slugs shaped like paths or projects stay slugs of the caller's project.
func TestCursorsAndSlugsStayInTheCallersProjects(t *testing.T) {
	env := servicetest.New(t, service.Options{RecallRate: -1})
	secret := env.Caller(t, keyOf(t, env, "acme/secret", "spy", memory.RoleWrite))
	for _, s := range []string{"n/1", "n/2", "n/3", "plans"} {
		remember(t, env, secret, "", s, "secret "+s+" zanzibar")
	}
	c := env.Caller(t, keyOf(t, env, "acme/a", "ann", memory.RoleWrite), keyOf(t, env, "acme/b", "bea", memory.RoleWrite))
	for _, s := range []string{"n/1", "n/2", "n/3"} {
		remember(t, env, c, "acme/a", s, "a "+s)
	}
	remember(t, env, c, "acme/b", "n/9", "b n/9")

	page, err := env.Svc.List(ctx, c, service.ListRequest{Project: "acme/a", Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page of acme/a: %+v, %v", page, err)
	}
	if _, err := env.Svc.List(ctx, c, service.ListRequest{Project: "acme/secret", Cursor: page.NextCursor}); err == nil ||
		err.Error() != "forbidden: no key for project acme/secret" {
		t.Errorf("acme/a's cursor used with acme/secret: %v, want forbidden", err)
	}
	crafted := base64.RawURLEncoding.EncodeToString([]byte("n/0"))
	for _, cur := range []string{page.NextCursor, crafted} {
		l, err := env.Svc.List(ctx, c, service.ListRequest{Project: "acme/b", Cursor: cur})
		if err != nil || len(l.Entries) != 1 || l.Entries[0].Project != "acme/b" || l.Entries[0].Slug != "n/9" {
			t.Errorf("cursor %q with acme/b: %+v, %v; want acme/b's one entry", cur, l, err)
		}
	}
	for _, cur := range []string{
		base64.RawURLEncoding.EncodeToString([]byte("../secret/n/1")),
		base64.RawURLEncoding.EncodeToString([]byte("acme/secret/../n/1")),
		"acme/secret", "../../",
	} {
		if _, err := env.Svc.List(ctx, c, service.ListRequest{Cursor: cur}); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("crafted cursor %q: %v, want invalid", cur, err)
		}
	}

	for _, slug := range []string{"../secret/plans", "acme/../secret/plans", "/acme/secret/plans", "..", "acme\\secret"} {
		for name, call := range map[string]func() error{
			"get":     func() error { _, err := env.Svc.Get(ctx, c, service.GetRequest{Slug: slug}); return err },
			"history": func() error { _, err := env.Svc.History(ctx, c, service.HistoryRequest{Slug: slug}); return err },
			"forget":  func() error { _, err := env.Svc.Forget(ctx, c, service.ForgetRequest{Slug: slug}); return err },
			"remember": func() error {
				_, err := env.Svc.Remember(ctx, c, service.RememberRequest{Slug: slug, Content: "x"})
				return err
			},
		} {
			if err := call(); memory.ErrorCode(err) != memory.CodeInvalid {
				t.Errorf("%s of slug %q: %v, want invalid", name, slug, err)
			}
		}
	}
	// "acme/secret/plans" is a valid slug: of the caller's own project.
	if _, err := env.Svc.Get(ctx, c, service.GetRequest{Slug: "acme/secret/plans"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("get of slug acme/secret/plans: %v, want not_found in acme/a", err)
	}
	if res := remember(t, env, c, "", "acme/secret/plans", "mine"); res.Project != "acme/a" {
		t.Errorf("remember of slug acme/secret/plans: %+v, want it in acme/a", res)
	}
	if g, err := env.Svc.Get(ctx, secret, service.GetRequest{Slug: "plans"}); err != nil || g.Version != 1 || !strings.Contains(g.Content, "secret") {
		t.Errorf("acme/secret's plans: %+v, %v; want its own version 1", g, err)
	}

	hits, err := env.Svc.Recall(ctx, c, service.RecallRequest{Query: "secret zanzibar plans", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits.Hits {
		if h.Project == "acme/secret" || strings.Contains(h.Snippet, "zanzibar") {
			t.Errorf("recall across the caller's projects reached acme/secret: %+v", h)
		}
		if !slices.Contains([]string{"acme/a", "acme/b"}, h.Project) {
			t.Errorf("hit of project %q", h.Project)
		}
	}
}
