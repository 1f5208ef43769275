package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/service"
)

// The tool contract is the service's request and answer types (service/calls.go):
// their JSON schemas are what clients see in tools/list.

// toolDefs declares the six tools. Annotations: everything but remember and
// forget is read-only; forget is the one destructive call (it hides an entry,
// even though its history stays); nothing reaches outside Munin.
func toolDefs() []mcp.Tool {
	readOnly := func() []mcp.ToolOption {
		return []mcp.ToolOption{hints(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})}
	}
	tools := []mcp.Tool{
		mcp.NewTool("remember",
			mcp.WithDescription("Store a new version of an entry."),
			mcp.WithInputSchema[service.RememberRequest](),
			mcp.WithOutputSchema[service.WriteResult](),
			hints(mcp.ToolAnnotation{DestructiveHint: mcp.ToBoolPtr(false)}),
		),
		mcp.NewTool("recall",
			append([]mcp.ToolOption{
				mcp.WithDescription("Full-text search over live entries; returns snippets. Use get for the full text."),
				mcp.WithInputSchema[service.RecallRequest](),
				mcp.WithOutputSchema[service.RecallResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("get",
			append([]mcp.ToolOption{
				mcp.WithDescription("Read an entry: its latest version or the given one."),
				mcp.WithInputSchema[service.GetRequest](),
				mcp.WithOutputSchema[service.Entry](),
			}, readOnly()...)...,
		),
		mcp.NewTool("list",
			append([]mcp.ToolOption{
				mcp.WithDescription("List live entries by slug, one page at a time."),
				mcp.WithInputSchema[service.ListRequest](),
				mcp.WithOutputSchema[service.ListResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("history",
			append([]mcp.ToolOption{
				mcp.WithDescription("An entry's versions, newest first, forgotten ones included."),
				mcp.WithInputSchema[service.HistoryRequest](),
				mcp.WithOutputSchema[service.HistoryResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("forget",
			mcp.WithDescription("Hide an entry by writing a tombstone version; its history stays."),
			mcp.WithInputSchema[service.ForgetRequest](),
			mcp.WithOutputSchema[service.WriteResult](),
			// true is the spec's default, said anyway: forget is the one destructive call.
			hints(mcp.ToolAnnotation{DestructiveHint: mcp.ToBoolPtr(true)}),
		),
	}
	for i := range tools {
		tightenArrays(tools[i].OutputSchema.Properties)
	}
	return tools
}

// hints replaces the annotations mcp.NewTool fills in (every hint, defaults
// included) with a's, plus openWorldHint false (nothing reaches outside
// Munin). Hints left nil take the spec's default (readOnly false, destructive
// true, idempotent false), and destructive and idempotent mean nothing for a
// read-only tool: unsaid, they cost no bytes of the tools/list answer that
// lands in every agent's context window (budget: < 6 KB).
func hints(a mcp.ToolAnnotation) mcp.ToolOption {
	return func(t *mcp.Tool) {
		a.OpenWorldHint = mcp.ToBoolPtr(false)
		t.Annotations = a
	}
}

// tightenArrays rewrites the generated `"type": ["null","array"]` of Go
// slices to `"type": "array"` in output schemas: results never carry null
// arrays, and saying so lets a validating client catch it if one ever does.
func tightenArrays(v any) {
	switch n := v.(type) {
	case map[string]any:
		if ts, ok := n["type"].([]any); ok && len(ts) == 2 && ts[0] == "null" && ts[1] == "array" {
			n["type"] = "array"
		}
		for _, child := range n {
			tightenArrays(child)
		}
	case []any:
		for _, child := range n {
			tightenArrays(child)
		}
	}
}
