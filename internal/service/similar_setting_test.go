package service_test

import (
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestSimilarSettingWhoMay: an admin key of the project or a server-admin
// key sets the similar setting; write, propose and read keys are
// forbidden, a key of another project gets not_found, a bad value is
// invalid — and none of the refusals changes the setting. Any key of the
// project reads it.
func TestSimilarSettingWhoMay(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	_, server := r.env.ServerAdmin(t, "ops")
	svc := r.env.Svc
	if got, err := svc.ProjectSimilar(ctx, r.reed, rev); err != nil || got != memory.SimilarOn {
		t.Fatalf("default similar setting: %q, %v; want on", got, err)
	}
	if err := svc.SetSimilarOf(ctx, r.rita, "", memory.SimilarOff); err != nil {
		t.Fatalf("rita switches the hint off: %v", err)
	}
	refused := []struct {
		name   string
		caller memory.Caller
		value  string
		code   memory.Code
	}{
		{"write key", r.walt, memory.SimilarOn, memory.CodeForbidden},
		{"propose key", r.pia, memory.SimilarOn, memory.CodeForbidden},
		{"read key", r.reed, memory.SimilarOn, memory.CodeForbidden},
		{"admin of another project", r.otto, memory.SimilarOn, memory.CodeNotFound},
		{"bad value", r.rita, "sometimes", memory.CodeInvalid},
		{"empty value", r.rita, "", memory.CodeInvalid},
	}
	for _, c := range refused {
		if err := svc.SetSimilar(ctx, c.caller, rev, c.value); memory.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if got, err := svc.ProjectSimilar(ctx, r.rita, rev); err != nil || got != memory.SimilarOff {
			t.Fatalf("after the refused %s the setting is %q, %v; want off", c.name, got, err)
		}
	}
	if err := svc.SetSimilarOf(ctx, r.rita, "", "yes"); memory.ErrorCode(err) != memory.CodeInvalid ||
		!strings.Contains(err.Error(), "on or off") {
		t.Errorf("bad value over REST's form: %v; want invalid naming on or off", err)
	}
	if err := svc.SetSimilarOf(ctx, server, "", memory.SimilarOn); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("server admin without a project: %v, want forbidden", err)
	}
	if _, err := svc.ProjectSimilar(ctx, r.otto, rev); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("otto reads acme/rev's setting: %v, want not_found", err)
	}
	if err := svc.SetSimilar(ctx, server, rev, memory.SimilarOn); err != nil {
		t.Fatalf("server admin: %v", err)
	}
	if got, err := svc.ProjectSimilar(ctx, r.pia, rev); err != nil || got != memory.SimilarOn {
		t.Errorf("pia reads the setting: %q, %v; want on", got, err)
	}
	if err := svc.SetProjectSimilar(ctx, rev, memory.SimilarOff); err != nil {
		t.Fatalf("operator: %v", err)
	}
	if got, _ := svc.ProjectSimilar(ctx, r.walt, rev); got != memory.SimilarOff {
		t.Errorf("after the operator's off: %q", got)
	}
	other := memory.ProjectRef{Workspace: "acme", Project: "other"}
	if got, err := svc.ProjectSimilar(ctx, r.otto, other); err != nil || got != memory.SimilarOn {
		t.Errorf("acme/other's setting: %q, %v; want on (the setting is per project)", got, err)
	}
}
