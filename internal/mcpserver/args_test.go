package mcpserver

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/service"
)

// TestBinder checks the strict binding on its own, without mcp-go's schema
// validation in front of it.
func TestBinder(t *testing.T) {
	b := newBinder[service.RememberRequest]()
	cases := []struct {
		name string
		args any
		want string // "" for success
	}{
		{"ok", map[string]any{"slug": "a/b", "content": "x", "expected_version": 0}, ""},
		{"nil arguments", nil, "invalid: missing argument slug"},
		{"null slug", map[string]any{"slug": nil, "content": "x"}, "invalid: missing argument slug"},
		{"missing content", map[string]any{"slug": "a"}, "invalid: missing argument content"},
		{"unknown", map[string]any{"slug": "a", "content": "x", "role": "admin"}, `invalid: unknown argument "role"`},
		{"wrong type", map[string]any{"slug": "a", "content": 5}, "invalid: argument content must be a string, got number"},
		{"tag not string", map[string]any{"slug": "a", "content": "x", "tags": []any{"ok", 1}}, "invalid: argument tags"},
		{"not an object", []any{"a"}, "invalid: arguments must be a JSON object, got array"},
		{"null title", map[string]any{"slug": "a", "content": "x", "title": nil}, "invalid: argument title must be a string, got null"},
		{"null tags", map[string]any{"slug": "a", "content": "x", "tags": nil, "expected_version": 0}, ""},
		{"null tag", map[string]any{"slug": "a", "content": "x", "tags": []any{"ok", nil}}, "invalid: argument tags must be an array of strings, got a null item"},
		{"other case", map[string]any{"Slug": "a", "content": "x"}, `invalid: unknown argument "Slug"`},
		{"both cases", map[string]any{"slug": "a", "SLUG": "b", "content": "x"}, `invalid: unknown argument "SLUG"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Arguments = tc.args
			args, err := b.bind(req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("bind: %v", err)
				}
				if args.ExpectedVersion == nil || *args.ExpectedVersion != 0 {
					t.Fatalf("expected_version 0 must stay distinct from absent: %+v", args)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("bind error %v, want prefix %q", err, tc.want)
			}
		})
	}
	req := mcp.CallToolRequest{}
	req.Params.Arguments = map[string]any{"slug": "a", "content": "x"}
	if args, err := b.bind(req); err != nil || args.ExpectedVersion != nil {
		t.Fatalf("absent expected_version must bind to nil: %+v, %v", args, err)
	}
}
