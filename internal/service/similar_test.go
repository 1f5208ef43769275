package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// Texts of the similar tests: an entry, a near-duplicate of it and an
// unrelated write.
const (
	simTitle   = "Nightly backup of the workspace files"
	simContent = "Every night at 02:00 UTC a cron job on munin-01 copies all workspace files to the NAS " +
		"with munin backup. The script verifies the checksum of each copy and reports failures to the operations channel."
	simAgain = "A cron job on munin-01 copies every workspace file nightly at 02:00 UTC to the NAS using " +
		"munin backup, then verifies each copy's checksum."
	simOther = "The web UI follows the system's color scheme; there is no toggle of its own."
)

func rememberSim(t *testing.T, svc *service.Service, c memory.Caller, req service.RememberRequest) service.WriteResult {
	t.Helper()
	res, err := svc.Remember(ctx, c, req)
	if err != nil {
		t.Fatalf("remember %s: %v", req.Slug, err)
	}
	return res
}

// TestRememberHintsSimilarForNewSlugs: a new slug restating an entry is
// answered with `similar` naming it; the same text written again as an
// update of either slug, and an unrelated new slug, are not.
func TestRememberHintsSimilarForNewSlugs(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, c := env.Key(t, "w", "p", "alice", memory.RoleWrite)
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "runbooks/backup", Title: simTitle, Content: simContent}); len(res.Similar) != 0 {
		t.Fatalf("the first entry is hinted: %+v", res.Similar)
	}
	res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "notes/backups", Content: simAgain})
	if len(res.Similar) != 1 || res.Similar[0].Slug != "runbooks/backup" || res.Similar[0].Title != simTitle ||
		res.Similar[0].Score <= 0 || res.Similar[0].Score > 1 {
		t.Fatalf("near-duplicate: similar = %+v, want runbooks/backup with a score in (0, 1]", res.Similar)
	}
	if res.Version != 1 {
		t.Errorf("the hinted write is version %d, want 1 (the hint does not stop it)", res.Version)
	}
	for _, slug := range []string{"notes/backups", "runbooks/backup"} {
		if res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: slug, Content: simAgain + " Updated."}); len(res.Similar) != 0 {
			t.Errorf("update of %s is hinted: %+v", slug, res.Similar)
		}
	}
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "decisions/dark-mode", Content: simOther}); len(res.Similar) != 0 {
		t.Errorf("unrelated write is hinted: %+v", res.Similar)
	}
}

// TestRememberHintsAtMostThree: of five entries with the same text, the
// answer names three.
func TestRememberHintsAtMostThree(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, c := env.Key(t, "w", "p", "alice", memory.RoleWrite)
	for i := range 5 {
		rememberSim(t, env.Svc, c, service.RememberRequest{Slug: fmt.Sprintf("copies/%d", i), Title: simTitle, Content: simContent})
	}
	res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "notes/backups", Title: simTitle, Content: simContent})
	if len(res.Similar) != memory.MaxSimilar {
		t.Fatalf("similar = %+v, want %d entries", res.Similar, memory.MaxSimilar)
	}
}

// TestRememberHintsOnlyTheCallersProject: an entry of another project the
// caller also holds a key for is never named, whatever its text
// (invariant 7, docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func TestRememberHintsOnlyTheCallersProject(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	ta, _ := env.Key(t, "w", "a", "alice", memory.RoleWrite)
	tb, _ := env.Key(t, "w", "b", "alice", memory.RoleWrite)
	_, other := env.Key(t, "v", "c", "carol", memory.RoleWrite)
	c := env.Caller(t, ta, tb)
	rememberSim(t, env.Svc, c, service.RememberRequest{Project: "w/b", Slug: "runbooks/backup", Title: simTitle, Content: simContent})
	rememberSim(t, env.Svc, other, service.RememberRequest{Slug: "runbooks/backup", Title: simTitle, Content: simContent})
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Project: "w/a", Slug: "notes/backups", Content: simAgain}); len(res.Similar) != 0 {
		t.Fatalf("a write in w/a names entries of other projects: %+v", res.Similar)
	}
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Project: "w/b", Slug: "notes/backups", Content: simAgain}); len(res.Similar) != 1 {
		t.Fatalf("a write in w/b: similar = %+v, want its own entry", res.Similar)
	}
}

// failingSimilar is an index whose duplicate lookup fails.
type failingSimilar struct {
	service.Index
	calls int
}

func (f *failingSimilar) Similar(context.Context, memory.ProjectRef, string, string) ([]memory.Similar, error) {
	f.calls++
	return nil, errors.New("index on fire")
}

// TestRememberSurvivesAFailingSimilarLookup: when the lookup fails, the
// remember still writes its version and answers, without a hint, and the
// failure is logged.
func TestRememberSurvivesAFailingSimilarLookup(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	var logs bytes.Buffer
	idx := &failingSimilar{Index: env.Index}
	svc := service.New(env.Store, idx, service.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { svc.Close() })
	token, _, err := svc.CreateKey(ctx, memory.ProjectRef{Workspace: "w", Project: "p"}, "alice", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	res := rememberSim(t, svc, c, service.RememberRequest{Slug: "notes/backups", Content: simAgain})
	if res.Version != 1 || len(res.Similar) != 0 || idx.calls != 1 {
		t.Fatalf("answer %+v after %d lookups, want version 1 without a hint after 1", res, idx.calls)
	}
	if got, err := svc.Get(ctx, c, service.GetRequest{Slug: "notes/backups"}); err != nil || got.Content != simAgain {
		t.Fatalf("get after the write: %+v, %v", got, err)
	}
	if !bytes.Contains(logs.Bytes(), []byte("index on fire")) {
		t.Errorf("the failure is not logged: %s", logs.String())
	}
}

// TestProposalKeepsItsSimilarHints: a proposal for a new slug restating an
// entry answers with the hint and keeps it for the review queue; with the
// hint switched off (Options.SimilarOff) neither a write nor a proposal
// carries one.
func TestProposalKeepsItsSimilarHints(t *testing.T) {
	for _, off := range []bool{false, true} {
		env := servicetest.New(t, service.Options{SimilarOff: off})
		_, admin := env.Key(t, "w", "p", "root", memory.RoleAdmin)
		_, pia := env.Key(t, "w", "p", "pia", memory.RolePropose)
		rememberSim(t, env.Svc, admin, service.RememberRequest{Slug: "runbooks/backup", Title: simTitle, Content: simContent})
		res := rememberSim(t, env.Svc, pia, service.RememberRequest{Slug: "notes/backups", Content: simAgain})
		list, err := env.Svc.Proposals(ctx, admin, service.ProposalsRequest{})
		if err != nil || len(list.Proposals) != 1 {
			t.Fatalf("off=%v: proposals %+v, %v", off, list, err)
		}
		kept := list.Proposals[0].Similar
		direct := rememberSim(t, env.Svc, admin, service.RememberRequest{Slug: "notes/backups-2", Content: simAgain})
		if off {
			if len(res.Similar)+len(kept)+len(direct.Similar) != 0 {
				t.Errorf("hint off, yet similar %+v / kept %+v / direct %+v", res.Similar, kept, direct.Similar)
			}
			continue
		}
		if res.State != memory.ProposalPending || len(res.Similar) != 1 || res.Similar[0].Slug != "runbooks/backup" {
			t.Errorf("proposal answered %+v, want pending with the hint runbooks/backup", res)
		}
		if len(kept) != 1 || kept[0].Slug != "runbooks/backup" {
			t.Errorf("the queue's proposal has similar %+v, want runbooks/backup", kept)
		}
		if len(direct.Similar) == 0 {
			t.Errorf("a direct new slug lost its hint: %+v", direct)
		}
	}
}

// TestRememberHintFollowsProjectSetting: with the project's similar setting
// off a near-duplicate gets no hint, and on again it does; another project
// keeps its hint meanwhile.
func TestRememberHintFollowsProjectSetting(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, c := env.Key(t, "w", "p", "alice", memory.RoleWrite)
	_, admin := env.Key(t, "w", "p", "ada", memory.RoleAdmin)
	_, other := env.Key(t, "w", "q", "alice", memory.RoleWrite)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	for _, k := range []memory.Caller{c, other} {
		rememberSim(t, env.Svc, k, service.RememberRequest{Slug: "runbooks/backup", Title: simTitle, Content: simContent})
	}
	if err := env.Svc.SetSimilar(ctx, admin, ref, memory.SimilarOff); err != nil {
		t.Fatal(err)
	}
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "notes/a", Content: simAgain}); len(res.Similar) != 0 {
		t.Errorf("similar off: the answer hints %+v", res.Similar)
	}
	if res := rememberSim(t, env.Svc, other, service.RememberRequest{Slug: "notes/a", Content: simAgain}); len(res.Similar) != 1 {
		t.Errorf("another project's hint: %+v, want one", res.Similar)
	}
	if err := env.Svc.SetSimilar(ctx, admin, ref, memory.SimilarOn); err != nil {
		t.Fatal(err)
	}
	if res := rememberSim(t, env.Svc, c, service.RememberRequest{Slug: "notes/b", Content: simAgain}); len(res.Similar) == 0 {
		t.Error("similar on again: no hint")
	}
}
