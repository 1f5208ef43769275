package service_test

import (
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestRefusedKeyCreationCreatesNoProject: a key that cannot be made (an
// agent name the store refuses) must not leave its new workspace and
// project behind — bad input changes nothing, for the web form of a server
// admin and for the command line alike.
func TestRefusedKeyCreationCreatesNoProject(t *testing.T) {
	r := newRoleEnv(t, service.Options{})
	before, _ := r.env.Svc.ListProjects(ctx)
	for i, agent := range []string{"", "two\nlines", "\x1b[31mred"} {
		ref := memory.ProjectRef{Workspace: "fresh", Project: "p" + string(rune('a'+i))}
		if _, _, err := r.env.Svc.CreateProjectKey(ctx, r.server, ref, agent, memory.RoleWrite); memory.ErrorCode(err) != memory.CodeInvalid {
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
	r := newRoleEnv(t, service.Options{})
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
	r := newRoleEnv(t, service.Options{})
	if err := service.ReadMetrics(r.server); err != nil {
		t.Errorf("server admin: %v", err)
	}
	for _, key := range []memory.Caller{r.alphaAdmin, r.gammaBot} {
		if err := service.ReadMetrics(key); memory.ErrorCode(err) != memory.CodeForbidden {
			t.Errorf("%s key reads metrics: %v, want forbidden", key.First().Role, err)
		}
	}
}

// TestProjectAdminCannotLiftItsBudgetAboveTheDefault: the write budget
// protects the server from one project; a project admin (the key the first
// start gives agents) may lower its project's budget or reset it to the
// server default, but only a server admin may raise it above the default.
func TestProjectAdminCannotLiftItsBudgetAboveTheDefault(t *testing.T) {
	r := newRoleEnv(t, service.Options{})
	const def = 1000 // service.Options{} default
	for _, n := range []int{def + 1, 1_000_000_000} {
		err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", budgetOf(n), nil)
		if memory.ErrorCode(err) != memory.CodeForbidden || !strings.Contains(err.Error(), "server-admin key") || !strings.Contains(err.Error(), "1000") {
			t.Errorf("alpha admin sets %d writes per hour: %v, want forbidden naming the default and the server-admin key", n, err)
		}
	}
	if _, limit, _ := r.env.Svc.WriteUsage(ctx, alpha); limit != def {
		t.Errorf("alpha's budget is %d after refused raises, want %d", limit, def)
	}
	for _, n := range []int{1, def, 0} {
		if err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", budgetOf(n), nil); err != nil {
			t.Errorf("alpha admin sets %d writes per hour: %v", n, err)
		}
	}
	if err := r.env.Svc.SetWriteBudgets(ctx, r.server, alpha.String(), budgetOf(50_000), budgetOf(64<<20)); err != nil {
		t.Errorf("server admin raises alpha's budget: %v", err)
	}
	if _, limit, _ := r.env.Svc.WriteUsage(ctx, alpha); limit != 50_000 {
		t.Errorf("alpha's budget is %d, want 50000", limit)
	}
	// The byte budget likewise; keeping what the server admin set is no
	// raise (the settings form sends both values).
	if err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", budgetOf(10), budgetOf(64<<20)); err != nil {
		t.Errorf("alpha admin lowers its writes and keeps its raised bytes: %v", err)
	}
	if err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", nil, budgetOf(65<<20)); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("alpha admin raises its bytes further: %v, want forbidden", err)
	}
	if _, limit, _ := r.env.Svc.WriteUsageBytes(ctx, alpha); limit != 64<<20 {
		t.Errorf("alpha's byte budget is %d, want %d", limit, 64<<20)
	}
	// A project admin may still lower a budget the server admin raised.
	if err := r.env.Svc.SetWriteBudgets(ctx, r.alphaAdmin, "", budgetOf(10), budgetOf(1<<20)); err != nil {
		t.Errorf("alpha admin lowers its raised budget: %v", err)
	}
}
