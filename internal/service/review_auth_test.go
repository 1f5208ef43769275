package service_test

import (
	"testing"

	"munin/internal/memory"
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
