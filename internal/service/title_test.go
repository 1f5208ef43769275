package service_test

import (
	"context"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestRememberTitleIsOneLine: a title with a control or bidi character is
// invalid and stores nothing; a title derived from content drops them, so
// every stored title passes the check import applies to it again.
func TestRememberTitleIsOneLine(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	ctx := context.Background()
	for _, title := range []string{"a\nb", "\x1b[2J", "a\u202eb"} {
		_, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "t", Title: title, Content: "x"})
		if memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("title %q: %v, want invalid", title, err)
		}
	}
	if _, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "t"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("a refused remember stored something: %v", err)
	}
	if _, err := env.Svc.Remember(ctx, key, service.RememberRequest{Slug: "d", Content: "# \x1b[31mRed\u202e alert\nbody"}); err != nil {
		t.Fatal(err)
	}
	got, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "d"})
	if err != nil || got.Title != "[31mRed alert" {
		t.Fatalf("derived title %q, %v; want %q", got.Title, err, "[31mRed alert")
	}
}
