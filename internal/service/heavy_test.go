package service_test

import (
	"errors"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestHeavyWorkSharesRecallLimits: heavy pages and recalls of a key share
// one allowance — with one at a time per key, a heavy page running refuses
// the key's recall and its next heavy page (budget_exhausted with a
// Retry-After), another project's key is not held up, and after release
// the key runs again.
func TestHeavyWorkSharesRecallLimits(t *testing.T) {
	env := servicetest.New(t, service.Options{RecallRate: -1, RecallConcurrency: 1})
	_, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	_, b := env.Key(t, "w", "b", "bob", memory.RoleRead)
	refA, refB := a.First().Project, b.First().Project

	release, err := env.Svc.HeavyWork(ctx, a, refA)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Svc.HeavyWork(ctx, a, refA)
	var me *memory.Error
	if !errors.As(err, &me) || me.Code != memory.CodeBudgetExhausted || me.RetryAfter <= 0 {
		t.Fatalf("second heavy page of the key: %v; want budget_exhausted with a Retry-After", err)
	}
	if _, err := env.Svc.Recall(ctx, a, service.RecallRequest{Query: "x"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("recall beside a heavy page of the key: %v; want budget_exhausted", err)
	}
	relB, err := env.Svc.HeavyWork(ctx, b, refB)
	if err != nil {
		t.Fatalf("another project's heavy page: %v", err)
	}
	relB()
	release()
	release, err = env.Svc.HeavyWork(ctx, a, refA)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release()
}

// TestHeavyWorkNeedsAKeyForTheProject: a project the caller holds no key
// for is not_found (as for one that does not exist); no key at all is
// unauthorized.
func TestHeavyWorkNeedsAKeyForTheProject(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	env.Key(t, "w", "b", "bob", memory.RoleRead)
	if _, err := env.Svc.HeavyWork(ctx, a, memory.ProjectRef{Workspace: "w", Project: "b"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("other project: %v; want not_found", err)
	}
	if _, err := env.Svc.HeavyWork(ctx, memory.Caller{}, memory.ProjectRef{Workspace: "w", Project: "a"}); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("no key: %v; want unauthorized", err)
	}
}
