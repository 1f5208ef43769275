package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestProjectRecallsShareOneLimit: eight keys of one project run no more
// recalls at once than the project's share, however many keys it minted;
// the others wait their turn (none is refused while one ends within the
// wait), and another project's recall runs meanwhile.
func TestProjectRecallsShareOneLimit(t *testing.T) {
	opts := service.Options{RecallRate: -1, ProjectRecallConcurrency: 2}
	env := servicetest.New(t, opts)
	var keys []memory.Caller
	for i := range 8 {
		_, k := env.Key(t, "w", "a", fmt.Sprintf("agent%d", i), memory.RoleRead)
		keys = append(keys, k)
	}
	_, other := env.Key(t, "w", "b", "bob", memory.RoleRead)
	idx := &gatedIndex{Index: env.Index, project: keys[0].First().Project, entered: make(chan struct{}, 100), gate: make(chan struct{})}
	svc := service.New(env.Store, idx, opts)
	t.Cleanup(func() { svc.Close() })

	errs := make(chan error, len(keys))
	for _, k := range keys {
		go func() {
			_, err := svc.Recall(ctx, k, service.RecallRequest{Query: "anything"})
			errs <- err
		}()
	}
	for range 2 {
		<-idx.entered
	}
	select {
	case <-idx.entered:
		t.Fatal("a third recall of the project ran while two were running")
	case err := <-errs:
		t.Fatalf("a recall came back while the project's two were held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := svc.Recall(ctx, other, service.RecallRequest{Query: "anything"}); err != nil {
		t.Fatalf("another project while the first runs its share: %v", err)
	}
	// One at a time the gate lets the held ones finish; each frees a place
	// for a waiting one, so all eight succeed.
	go func() {
		for range len(keys) - 2 {
			idx.gate <- struct{}{}
			<-idx.entered
		}
		close(idx.gate)
	}()
	for range keys {
		if err := <-errs; err != nil {
			t.Fatalf("recall: %v", err)
		}
	}
}

// TestProjectRecallWaitEnds: a recall that waits for its project's turn
// longer than service.ProjectRecallWait is refused with budget_exhausted
// naming the project's share; one whose client left ends at once.
func TestProjectRecallWaitEnds(t *testing.T) {
	opts := service.Options{RecallRate: -1, ProjectRecallConcurrency: 1}
	env := servicetest.New(t, opts)
	_, a1 := env.Key(t, "w", "a", "one", memory.RoleRead)
	_, a2 := env.Key(t, "w", "a", "two", memory.RoleRead)
	idx := &gatedIndex{Index: env.Index, project: a1.First().Project, entered: make(chan struct{}, 100), gate: make(chan struct{})}
	svc := service.New(env.Store, idx, opts)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(idx.gate) }); svc.Close() })
	go func() { _, _ = svc.Recall(ctx, a1, service.RecallRequest{Query: "held"}) }()
	<-idx.entered
	_, err := svc.Recall(ctx, a2, service.RecallRequest{Query: "waits"})
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), "project w/a runs 1 recalls at once") {
		t.Fatalf("recall waiting past the project's wait: %v, want budget_exhausted naming the project's share", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := svc.Recall(cctx, a2, service.RecallRequest{Query: "gone"}); memory.ErrorCode(err) == memory.CodeBudgetExhausted || err == nil {
		t.Fatalf("recall of a client that left: %v, want it ended, not refused by the budget", err)
	}
}

// TestProjectRecallRate: the keys of one project together recall at most
// service.ProjectRecallFactor times one key's rate; the refusal names the
// project, and another project keeps its own rate.
func TestProjectRecallRate(t *testing.T) {
	now := time.Now()
	env := servicetest.New(t, service.Options{RecallRate: 1, RecallBurst: 2, Now: func() time.Time { return now }})
	admitted := 0
	var refusal error
	for i := range 10 { // 10 keys × burst 2 = 20 > the project's 5 × 2 = 10
		_, k := env.Key(t, "w", "a", fmt.Sprintf("agent%d", i), memory.RoleRead)
		for range 2 {
			if _, err := env.Svc.Recall(ctx, k, service.RecallRequest{Query: "x"}); err == nil {
				admitted++
			} else {
				refusal = err
			}
		}
	}
	if want := service.ProjectRecallFactor * 2; admitted != want {
		t.Fatalf("the project's keys made %d recalls in one instant, want its burst of %d", admitted, want)
	}
	if memory.ErrorCode(refusal) != memory.CodeBudgetExhausted || !strings.Contains(refusal.Error(), "project w/a may recall 5 times per second") {
		t.Fatalf("refusal: %v, want budget_exhausted naming the project's rate", refusal)
	}
	_, b := env.Key(t, "w", "b", "bob", memory.RoleRead)
	if _, err := env.Svc.Recall(ctx, b, service.RecallRequest{Query: "x"}); err != nil {
		t.Fatalf("another project: %v", err)
	}
}
