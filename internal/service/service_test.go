package service_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

var ctx = context.Background()

func TestWriteBudgetExhaustsAndResetsNextHour(t *testing.T) {
	var mu sync.Mutex
	// The budget counts the audit log's writes since the clock's hour, and
	// the store stamps them with the real time: FutureHour keeps those real
	// stamps out of both hours this test looks at.
	now := servicetest.FutureHour().Add(15 * time.Minute)
	reset := now.Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 3, Now: clock})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)

	for i := 0; i < 3; i++ {
		if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "loop", Content: "write"}); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "loop", Content: "one too many"})
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), "resets at "+reset) {
		t.Fatalf("4th write: %v, want budget_exhausted naming the reset", err)
	}
	if g, _ := env.Svc.Get(ctx, key, service.GetRequest{Slug: "loop"}); g.Version != 3 {
		t.Fatalf("refused write changed the entry: version %d", g.Version)
	}

	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "loop", Content: "new hour"}); err != nil {
		t.Fatalf("write in the next hour: %v", err)
	}
}

func TestWriteBudgetSurvivesRestartAndIsPerProject(t *testing.T) {
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 2})
	_, a := env.Key(t, "w", "a", "agent", memory.RoleAdmin)
	_, b := env.Key(t, "w", "b", "agent", memory.RoleWrite)
	for i := 0; i < 2; i++ {
		if _, err := env.Svc.Remember(ctx, a, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh service over the same store counts the writes from the audit log.
	fresh := service.New(env.Store, env.Index, service.Options{DefaultWriteBudget: 2})
	defer fresh.Close()
	if _, err := fresh.Remember(ctx, a, service.RememberRequest{Slug: "s", Content: "x"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("after restart: %v, want budget_exhausted", err)
	}
	if _, err := fresh.Remember(ctx, b, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
		t.Fatalf("other project must have its own budget: %v", err)
	}
	// Raising the project's budget (an operator's call: above the default
	// a project admin may not) takes effect at once.
	if err := fresh.SetProjectWriteBudget(ctx, a.First().Project, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Remember(ctx, a, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
		t.Fatalf("after raising the budget: %v", err)
	}
	if err := fresh.SetWriteBudgets(ctx, b, "", budgetOf(5), nil); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Fatalf("write key setting the budget: %v, want forbidden", err)
	}
}

func TestBudgetOffAllowsUnlimitedWrites(t *testing.T) {
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 1, BudgetOff: true})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	for i := 0; i < 5; i++ {
		if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
			t.Fatalf("write %d with budget off: %v", i+1, err)
		}
	}
}

func TestFailedWriteDoesNotSpendBudget(t *testing.T) {
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 2})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	zero := 0
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "s", Content: "x", ExpectedVersion: &zero}); memory.ErrorCode(err) != memory.CodeConflict {
		t.Fatalf("want conflict, got %v", err)
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "s", Content: "x"}); err != nil {
		t.Fatalf("the conflicting write spent budget: %v", err)
	}
}

func TestSearchLogRecordsRecalls(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "bleve indexes everything"})
	for _, q := range []string{"bleve", "nothing-matches-this"} {
		if _, err := env.Svc.Recall(ctx, key, service.RecallRequest{Query: q}); err != nil {
			t.Fatal(err)
		}
	}
	env.Svc.FlushSearchLog()
	rows, err := env.Store.SearchRows(ctx, key.First().Project, memory.LogFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("search log has %d rows, want 2: %+v", len(rows), rows)
	}
	byQuery := map[string]int{}
	for _, r := range rows {
		byQuery[r.Query] = r.Hits
		if r.Agent != "agent" {
			t.Errorf("row agent %q, want agent", r.Agent)
		}
	}
	if byQuery["bleve"] != 1 || byQuery["nothing-matches-this"] != 0 {
		t.Fatalf("hit counts %v", byQuery)
	}
}

func TestTitleDefaultsToFirstLine(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "\n# Database choice\n\nSQLite."})
	g, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "a"})
	if err != nil || g.Title != "Database choice" {
		t.Fatalf("title %q, err %v", g.Title, err)
	}
}

func TestScope(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, admin := env.Key(t, "w", "a", "boss", memory.RoleAdmin)
	_, writer := env.Key(t, "w", "b", "bot", memory.RoleWrite)
	other := memory.ProjectRef{Workspace: "w", Project: "b"}

	if scoped, err := env.Svc.Scope(ctx, admin, admin.First().Project); err != nil || scoped != admin.First() {
		t.Fatalf("admin scope into its own project = %+v, %v", scoped, err)
	}
	// Another project answers exactly as a missing one, for every project role.
	for _, key := range []memory.Caller{admin, writer} {
		ref := other
		if key.First().Project == other {
			ref = admin.First().Project
		}
		_, errOther := env.Svc.Scope(ctx, key, ref)
		_, errMissing := env.Svc.Scope(ctx, key, nope)
		sameAsMissing(t, string(key.First().Role)+" key scoping into another project", errOther, errMissing, ref)
	}
	if _, err := env.Svc.Scope(ctx, admin, memory.ProjectRef{Workspace: "../x", Project: "a"}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Fatalf("scope with a bad name: %v, want invalid", err)
	}

	// A server-admin key scopes into every existing project, and stays a
	// server-admin key there: it reads and writes nothing.
	_, srv := env.ServerAdmin(t, "ops")
	scoped, err := env.Svc.Scope(ctx, srv, other)
	if err != nil || scoped.Project != other || !scoped.ServerAdmin() {
		t.Fatalf("server-admin scope = %+v, %v", scoped, err)
	}
	if _, err := env.Svc.Remember(ctx, memory.NewCaller(scoped), service.RememberRequest{Slug: "x", Content: "from ops"}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Fatalf("server-admin remember through scope: %v, want forbidden", err)
	}
	if _, err := env.Svc.Scope(ctx, srv, nope); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("server-admin scope into a missing project: %v, want not_found", err)
	}
}

// TestIdempotentRetryIsFreeOfBudget: a retry writes nothing, so it neither
// spends the write budget nor is refused once the budget is used up.
func TestIdempotentRetryIsFreeOfBudget(t *testing.T) {
	// A fixed clock, so no hour boundary can refill the budget mid-test.
	at := servicetest.FutureHour().Add(15 * time.Minute)
	env := servicetest.New(t, service.Options{DefaultWriteBudget: 2, Now: func() time.Time { return at }})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	first, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "hello", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // retries while budget is left must not spend it
		again, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "hello", IdempotencyKey: "k1"})
		if err != nil || again.Version != first.Version || !again.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("retry %d = %+v, %v; want the first result %+v", i+1, again, err, first)
		}
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "b", Content: "second write"}); err != nil {
		t.Fatalf("second write within a budget of 2: %v", err)
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "c", Content: "third"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("third write: %v, want budget_exhausted", err)
	}
	// Budget used up: the retry is still answered, a new key is refused.
	again, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "hello", IdempotencyKey: "k1"})
	if err != nil || again.Version != first.Version {
		t.Fatalf("retry over budget = %+v, %v; want the first result %+v", again, err, first)
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "hello", IdempotencyKey: "k2"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("new idempotency key over budget: %v, want budget_exhausted", err)
	}
	if g, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "a"}); err != nil || g.Version != 1 {
		t.Fatalf("entry a: %+v, %v; want one version", g, err)
	}
}

// TestCancelledCallIsNoInternalError: a client that hangs up mid-call is no
// server fault: the call ends unavailable, and no error line is logged.
func TestCancelledCallIsNoInternalError(t *testing.T) {
	var logged bytes.Buffer
	env := servicetest.New(t, service.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "a", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, getErr := env.Svc.Get(cancelled, key, service.GetRequest{Slug: "a"})
	_, recallErr := env.Svc.Recall(cancelled, key, service.RecallRequest{Query: "x"})
	for name, err := range map[string]error{"get": getErr, "recall": recallErr} {
		if memory.ErrorCode(err) != memory.CodeUnavailable {
			t.Errorf("%s with a cancelled context: %v, want unavailable", name, err)
		}
	}
	if strings.Contains(logged.String(), "internal error") {
		t.Errorf("a cancelled call was logged as an internal error:\n%s", logged.String())
	}
}
