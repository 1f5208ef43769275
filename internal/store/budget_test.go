package store

import (
	"context"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestWrittenSince: the byte budget is seeded with the content bytes (not
// characters) of the versions written since the hour began.
func TestWrittenSince(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	ctx := context.Background()
	start := time.Now()
	for _, w := range []memory.Write{
		{Slug: "a", Content: "abc", Agent: "x"},
		{Slug: "b", Content: "ü", Agent: "x"},
		{Slug: "a", Deleted: true, Agent: "x"},
	} {
		if _, err := s.Append(ctx, ref, w); err != nil {
			t.Fatal(err)
		}
	}
	if n, b, err := s.WrittenSince(ctx, ref, start.Add(-time.Second)); err != nil || n != 3 || b != len("abc")+len("ü") {
		t.Fatalf("WrittenSince = %d writes, %d bytes (%v); want 3 writes, %d bytes", n, b, err, len("abc")+len("ü"))
	}
	if n, b, err := s.WrittenSince(ctx, ref, time.Now().Add(time.Hour)); err != nil || n != 0 || b != 0 {
		t.Fatalf("WrittenSince a later hour = %d, %d (%v); want 0, 0", n, b, err)
	}
}

func TestSetWriteBudgetBytes(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	ctx := context.Background()
	if err := s.SetWriteBudgetBytes(ctx, ref, 4096); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Project(ctx, ref); err != nil || p.WriteBudgetBytes != 4096 {
		t.Fatalf("project = %+v (%v), want 4096 bytes per hour", p, err)
	}
	if ps, err := s.ListProjects(ctx); err != nil || len(ps) != 1 || ps[0].WriteBudgetBytes != 4096 {
		t.Fatalf("projects = %+v (%v)", ps, err)
	}
	if err := s.SetWriteBudgetBytes(ctx, ref, -1); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Fatalf("negative budget: %v, want invalid", err)
	}
	if err := s.SetWriteBudgetBytes(ctx, memory.ProjectRef{Workspace: "ws", Project: "nope"}, 1); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("unknown project: %v, want not_found", err)
	}
}
