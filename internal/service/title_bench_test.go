package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// BenchmarkRememberOverBudget64K is a remember of 64 KB of random words on
// one line, without a title, that the byte budget refuses: what the hostile
// load test's attack 2 sends about fifty times a second. Its cost comes
// before the refusal (checks, the derived title), so it is CPU another
// project's recall waits behind.
func BenchmarkRememberOverBudget64K(b *testing.B) {
	env := servicetest.New(b, service.Options{})
	_, key := env.Key(b, "w", "p", "angreifer", memory.RoleWrite)
	rng := rand.New(rand.NewPCG(5, 6))
	var sb strings.Builder
	for sb.Len() < 65000 {
		fmt.Fprintf(&sb, "%c%c%c%c%c ", 'a'+rng.IntN(26), 'a'+rng.IntN(26), 'a'+rng.IntN(26), 'a'+rng.IntN(26), 'a'+rng.IntN(26))
	}
	content := sb.String()
	ctx := context.Background()
	refused := 0
	for i := 0; refused == 0 && i < 100; i++ { // spend the burst of the byte pace
		_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: fmt.Sprintf("voll/%d", i), Content: content})
		if memory.ErrorCode(err) == memory.CodeBudgetExhausted {
			refused++
		} else if err != nil {
			b.Fatal(err)
		}
	}
	if refused == 0 {
		b.Fatal("the byte budget never refused")
	}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: fmt.Sprintf("flut/%d", i), Content: content})
		if memory.ErrorCode(err) != memory.CodeBudgetExhausted {
			b.Fatalf("remember %d: %v, want budget_exhausted", i, err)
		}
	}
}
