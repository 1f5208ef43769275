package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/service"
)

// The tool contract is the service's request and answer types (service/calls.go):
// their JSON schemas are what clients see in tools/list.

// toolDefs is the tools as tools/list shows them: generatedTools made lean
// (schemas.go).
func toolDefs() []mcp.Tool {
	tools := generatedTools()
	for i := range tools {
		leanInput(&tools[i])
		var drop []string
		switch tools[i].Name {
		case "forget":
			drop = []string{"similar"} // only a new slug gets similar
		case "changes":
			// only while a workspace cannot be read (docs/changes.md)
			drop = []string{"unavailable"}
		}
		leanOutput(&tools[i], drop...)
	}
	return tools
}

// generatedTools declares the eight tools with the schemas mcp-go generates
// from the Go types. Annotations: everything but remember, forget and
// review is read-only; forget is the one destructive call (it hides an
// entry, even though its history stays); nothing reaches outside Munin.
func generatedTools() []mcp.Tool {
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
				mcp.WithDescription("Search live entries; answers snippets (get reads the full text)."),
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
				mcp.WithDescription("An entry's versions, newest first, forgotten ones too."),
				mcp.WithInputSchema[service.HistoryRequest](),
				mcp.WithOutputSchema[service.HistoryResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("forget",
			mcp.WithDescription("Hide an entry with a tombstone version; its history stays."),
			mcp.WithInputSchema[service.ForgetRequest](),
			mcp.WithOutputSchema[service.WriteResult](),
			// true is the spec's default, said anyway: forget is the one destructive call.
			hints(mcp.ToolAnnotation{DestructiveHint: mcp.ToBoolPtr(true)}),
		),
		mcp.NewTool("review",
			mcp.WithDescription(reviewDescription),
			mcp.WithInputSchema[reviewArgs](),
			mcp.WithOutputSchema[reviewResult](),
			// Approving adds a version, rejecting marks a proposal: nothing is lost.
			hints(mcp.ToolAnnotation{DestructiveHint: mcp.ToBoolPtr(false)}),
		),
		mcp.NewTool("changes",
			append([]mcp.ToolOption{
				mcp.WithDescription(changesDescription),
				mcp.WithInputSchema[changesArgs](),
				mcp.WithOutputSchema[service.ChangesResult](),
			}, readOnly()...)...,
		),
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
