package service_test

import (
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestByteBudgetOfProject: content bytes per hour are budgeted beside the
// count, per project (settable by its admin key); idempotent retries write
// nothing and spend nothing.
func TestByteBudgetOfProject(t *testing.T) {
	at := servicetest.FutureHour().Add(15 * time.Minute) // a clock standing still
	env := servicetest.New(t, service.Options{DefaultWriteBudgetBytes: 10, Now: func() time.Time { return at }})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	_, admin := env.Key(t, "w", "p", "boss", memory.RoleAdmin)
	remember := func(slug, content, idem string) error {
		_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: slug, Content: content, IdempotencyKey: idem})
		return err
	}
	if err := remember("a", "12345678", "k1"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := remember("a", "12345678", "k1"); err != nil {
			t.Fatalf("retry %d: %v", i+1, err)
		}
	}
	err := remember("b", "abc", "")
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), "8 of its 10 bytes") {
		t.Fatalf("write past the byte budget: %v, want budget_exhausted naming the bytes", err)
	}
	if err := remember("a", "12345678", "k1"); err != nil {
		t.Fatalf("retry over the byte budget: %v, want the first result", err)
	}
	if err := remember("b", "ab", ""); err != nil {
		t.Fatalf("write that fits the 2 bytes left: %v", err)
	}
	if used, limit, err := env.Svc.WriteUsageBytes(ctx, key.First().Project); err != nil || used != 10 || limit != 10 {
		t.Fatalf("byte usage = %d of %d (%v), want 10 of 10", used, limit, err)
	}

	if err := env.Svc.SetWriteBudgets(ctx, key, "", nil, budgetOf(100)); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Fatalf("write key setting the byte budget: %v, want forbidden", err)
	}
	if err := env.Svc.SetWriteBudgets(ctx, admin, "", nil, budgetOf(-1)); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Fatalf("negative byte budget: %v, want invalid", err)
	}
	if err := env.Svc.SetWriteBudgets(ctx, admin, "", nil, budgetOf(100)); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Fatalf("project admin raising the byte budget above the default: %v, want forbidden", err)
	}
	if err := env.Svc.SetProjectWriteBudgetBytes(ctx, key.First().Project, 100); err != nil { // the operator may
		t.Fatal(err)
	}
	if err := remember("c", "more text", ""); err != nil {
		t.Fatalf("write after raising the byte budget: %v", err)
	}
	if err := remember("d", strings.Repeat("x", 101), ""); memory.ErrorCode(err) != memory.CodeTooLarge {
		t.Fatalf("content larger than the whole byte budget: %v, want too_large", err)
	}
}

// budgetOf is a budget value for SetWriteBudgets, which takes each as optional.
func budgetOf(n int) *int { return &n }
