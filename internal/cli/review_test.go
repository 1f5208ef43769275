package cli

import (
	"context"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/store"
)

// TestProjectReviewCommand: munin project review W/P agents sets the
// project's review setting in its workspace file; a bad setting or a
// missing project is refused and changes nothing.
func TestProjectReviewCommand(t *testing.T) {
	dir := newDataDir(t)
	if err, out := run(t, "project", "review", "--data", dir, "w/p", "agents"); err != nil || !strings.Contains(out, "review of w/p: agents") {
		t.Fatalf("project review: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"project", "review", "--data", dir, "w/p", "sometimes"},
		{"project", "review", "--data", dir, "w/nope", "off"},
		{"project", "review", "--data", dir, "w/p"},
	} {
		if err, _ := run(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.Review(context.Background(), memory.ProjectRef{Workspace: "w", Project: "p"}); err != nil || r != memory.ReviewAgents {
		t.Errorf("review setting after the command: %q, %v; want agents", r, err)
	}
}
