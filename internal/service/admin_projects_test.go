package service_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestMeNamesEveryProject: Me lists the caller's projects in key order, each
// with the role and agent of the key that counts there.
func TestMeNamesEveryProject(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	c := env.Caller(t,
		keyOf(t, env, "acme/a", "ann", memory.RoleAdmin),
		keyOf(t, env, "acme/b", "bee", memory.RoleRead),
		keyOf(t, env, "acme/b", "bea", memory.RoleWrite))
	got, _ := json.Marshal(env.Svc.Me(c))
	want := `{"projects":[{"project":"acme/a","role":"admin","agent":"ann"},{"project":"acme/b","role":"write","agent":"bea"}]}`
	if string(got) != want {
		t.Errorf("me = %s, want %s", got, want)
	}
	_, srv := env.ServerAdmin(t, "ops")
	if got, _ := json.Marshal(env.Svc.Me(srv)); string(got) != `{"projects":[],"server_admin":true}` {
		t.Errorf("me of a server-admin key = %s", got)
	}
}

// TestAdministrationOfSeveralKeys: a caller administers exactly the
// projects it holds an admin key for; its other projects it sees with their
// keys' roles, and a project without a key answers as a missing one.
func TestAdministrationOfSeveralKeys(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	ta := keyOf(t, env, "acme/a", "ann", memory.RoleAdmin)
	tb := keyOf(t, env, "acme/b", "bea", memory.RoleWrite)
	_, boss := env.Key(t, "acme", "b", "boss", memory.RoleAdmin)
	_, xavier := env.Key(t, "acme", "x", "xavier", memory.RoleAdmin)
	refA, refB, refX := memory.ProjectRef{Workspace: "acme", Project: "a"}, boss.First().Project, xavier.First().Project
	c := env.Caller(t, ta, tb)

	projects, err := env.Svc.Projects(ctx, c)
	if err != nil || len(projects) != 2 || projects[0].Ref != refA || projects[1].Ref != refB {
		t.Errorf("overview: %+v, %v; want acme/a and acme/b", projects, err)
	}
	keys, err := env.Svc.ProjectKeys(ctx, c)
	if err != nil || len(keys) != 1 || keys[0].Project != refA {
		t.Errorf("keys: %+v, %v; want acme/a's key only", keys, err)
	}
	if _, err := env.Svc.Settings(ctx, c, refA); err != nil {
		t.Errorf("settings of acme/a: %v", err)
	}
	if _, err := env.Svc.Settings(ctx, c, refB); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("settings of acme/b through a write key: %v, want forbidden", err)
	}
	if _, _, err := env.Svc.CreateProjectKey(ctx, c, refB, "new", memory.RoleRead); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("key for acme/b through a write key: %v, want forbidden", err)
	}
	if _, k, err := env.Svc.CreateProjectKey(ctx, c, refA, "new", memory.RoleRead); err != nil || k.Project != refA {
		t.Errorf("key for acme/a: %+v, %v", k, err)
	}
	_, _, errX := env.Svc.CreateProjectKey(ctx, c, refX, "new", memory.RoleRead)
	_, _, errNope := env.Svc.CreateProjectKey(ctx, c, nope, "new", memory.RoleRead)
	sameAsMissing(t, "key for a project without a key", errX, errNope, refX)
	_, errX = env.Svc.Settings(ctx, c, refX)
	_, errNope = env.Svc.Settings(ctx, c, nope)
	sameAsMissing(t, "settings of a project without a key", errX, errNope, refX)
	_, _, errX = env.Svc.Entries(ctx, c, refX, service.EntryQuery{})
	_, _, errNope = env.Svc.Entries(ctx, c, nope, service.EntryQuery{})
	sameAsMissing(t, "entries of a project without a key", errX, errNope, refX)

	errUnknown := env.Svc.RevokeProjectKey(ctx, c, 99999)
	for _, k := range []memory.Key{boss.First(), xavier.First()} {
		err := env.Svc.RevokeProjectKey(ctx, c, k.ID)
		if memory.ErrorCode(err) != memory.CodeNotFound || err.Error() != strings.ReplaceAll(errUnknown.Error(), "99999", strconv.FormatInt(k.ID, 10)) {
			t.Errorf("revoke %s's key of %s: %v; an unknown key: %v; want the same not_found", k.Agent, k.Project, err, errUnknown)
		}
	}

	// Admin keys of two projects administer both.
	both := env.Caller(t, ta, keyOf(t, env, "acme/b", "boss2", memory.RoleAdmin))
	keys, err = env.Svc.ProjectKeys(ctx, both)
	var refs []memory.ProjectRef
	for _, k := range keys {
		refs = append(refs, k.Project)
	}
	if err != nil || !slices.Contains(refs, refA) || !slices.Contains(refs, refB) || slices.Contains(refs, refX) {
		t.Errorf("keys of two admin keys: %v, %v; want acme/a's and acme/b's", refs, err)
	}
	if err := env.Svc.RevokeProjectKey(ctx, both, boss.First().ID); err != nil {
		t.Errorf("revoke a key of the second admin key's project: %v", err)
	}
	if _, err := env.Svc.Authenticate(ctx, tb); err != nil {
		t.Errorf("bea's key stopped working: %v", err)
	}
}
