package service_test

import (
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestRefusedKeyCreationCreatesNoProject: a key that cannot be made (an
// agent name the store refuses) must not leave its new workspace and
// project behind — bad input changes nothing, for the web form of a server
// admin and for the command line alike.
func TestRefusedKeyCreationCreatesNoProject(t *testing.T) {
	r := newRoleEnv(t)
	before, _ := r.env.Svc.ListProjects(ctx)
	for i, agent := range []string{"", "two\nlines", "\x1b[31mred"} {
		ref := memory.ProjectRef{Workspace: "fresh", Project: "p" + string(rune('a'+i))}
		if _, _, err := r.br.CreateKey(ctx, r.server, ref, agent, memory.RoleWrite); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("server admin creates a key for agent %q: %v, want invalid", agent, err)
		}
		if _, _, err := r.env.Svc.CreateKey(ctx, ref, agent, memory.RoleWrite); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("operator creates a key for agent %q: %v, want invalid", agent, err)
		}
	}
	if after, _ := r.env.Svc.ListProjects(ctx); len(after) != len(before) {
		t.Errorf("refused key creations left projects behind: %d projects, were %d: %+v", len(after), len(before), after)
	}
}

// TestScopeWriter: the check of the web UI's entry forms is the service's:
// a writer of the project gets its scoped key; a read key is forbidden with
// its role named; a server-admin key gets the one refusal of every memory
// tool; another project answers as a missing one.
func TestScopeWriter(t *testing.T) {
	r := newRoleEnv(t)
	_, reader := r.env.Key(t, "other", "gamma", "reader", memory.RoleRead)
	if k, err := r.env.Svc.ScopeWriter(ctx, r.gammaBot, gamma); err != nil || k.Project != gamma {
		t.Errorf("gamma's writer: %+v, %v", k, err)
	}
	if k, err := r.env.Svc.ScopeWriter(ctx, r.gammaAdmin, gamma); err != nil || k.Project != gamma {
		t.Errorf("gamma's admin: %+v, %v", k, err)
	}
	if _, err := r.env.Svc.ScopeWriter(ctx, reader, gamma); err == nil ||
		err.Error() != "forbidden: key of reader has role read and cannot change entries" {
		t.Errorf("read key: %v", err)
	}
	if _, err := r.env.Svc.ScopeWriter(ctx, r.server, gamma); err == nil ||
		err.Error() != "forbidden: a server-admin key administers the server; use a project key for memory tools" {
		t.Errorf("server-admin key: %v", err)
	}
	_, errOther := r.env.Svc.ScopeWriter(ctx, r.alphaAdmin, gamma)
	_, errMissing := r.env.Svc.ScopeWriter(ctx, r.alphaAdmin, nope)
	sameAsMissing(t, "another project's entry form", errOther, errMissing, gamma)
}

// TestMetricsNeedServerAdmin: the service decides who reads /metrics.
func TestMetricsNeedServerAdmin(t *testing.T) {
	r := newRoleEnv(t)
	if err := service.ReadMetrics(r.server); err != nil {
		t.Errorf("server admin: %v", err)
	}
	for _, key := range []memory.Key{r.alphaAdmin, r.gammaBot} {
		if err := service.ReadMetrics(key); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key reads metrics: %v, want forbidden", key.Role, err)
		}
	}
}
