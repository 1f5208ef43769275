package cli

import (
	"context"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/store"
)

// TestProjectSettingCommands: munin project review W/P agents and munin
// project similar W/P off set the project's setting in its workspace
// file; a bad setting (refused naming the allowed ones), a missing project
// or a missing setting is refused and changes nothing; the other setting
// stays as it was.
func TestProjectSettingCommands(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	cases := []struct {
		name, value, bad, allowed string
		read                      func(*store.Store) (string, error)
		other                     func(*store.Store) (string, error)
		otherDefault              string
	}{
		{"review", memory.ReviewAgents, "sometimes", "off or agents",
			func(s *store.Store) (string, error) { return s.Review(context.Background(), ref) },
			func(s *store.Store) (string, error) { return s.SimilarSetting(context.Background(), ref) }, memory.SimilarOn},
		{"similar", memory.SimilarOff, "agents", "on or off",
			func(s *store.Store) (string, error) { return s.SimilarSetting(context.Background(), ref) },
			func(s *store.Store) (string, error) { return s.Review(context.Background(), ref) }, memory.ReviewOff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newDataDir(t)
			if err, out := run(t, "project", c.name, "--data", dir, "w/p", c.value); err != nil || !strings.Contains(out, c.name+" of w/p: "+c.value) {
				t.Fatalf("project %s: %v\n%s", c.name, err, out)
			}
			if err, _ := run(t, "project", c.name, "--data", dir, "w/p", c.bad); err == nil || !strings.Contains(err.Error(), c.allowed) {
				t.Errorf("project %s w/p %s: %v; want an error naming %s", c.name, c.bad, err, c.allowed)
			}
			for _, args := range [][]string{
				{"project", c.name, "--data", dir, "w/nope", c.value},
				{"project", c.name, "--data", dir, "w/p"},
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
			if v, err := c.read(s); err != nil || v != c.value {
				t.Errorf("%s setting after the command: %q, %v; want %s", c.name, v, err, c.value)
			}
			if v, err := c.other(s); err != nil || v != c.otherDefault {
				t.Errorf("the other setting after project %s: %q, %v; want %s", c.name, v, err, c.otherDefault)
			}
		})
	}
}
