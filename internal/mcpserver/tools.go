package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"
)

// The tool contract: argument and result types whose JSON schemas are what
// clients see in tools/list. Descriptions are kept short on purpose: the whole
// tools/list answer lands in every agent's context window (budget: < 6 KB).

type rememberArgs struct {
	Slug            string   `json:"slug" jsonschema:"entry id: lowercase path like decisions/db-choice"`
	Content         string   `json:"content" jsonschema:"the text (markdown), at most 64 KiB"`
	Title           string   `json:"title,omitempty" jsonschema:"default: first line of content"`
	Tags            []string `json:"tags,omitempty"`
	ExpectedVersion *int     `json:"expected_version,omitempty" jsonschema:"fail unless the latest version is this; 0: slug must be new"`
	IdempotencyKey  string   `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first result"`
}

type rememberResult struct {
	Slug      string `json:"slug"`
	Version   int    `json:"version"`
	CreatedAt string `json:"created_at"`
}

type recallArgs struct {
	Query string   `json:"query" jsonschema:"words to search for: at most 1 KB and 32 distinct words, function words not counted"`
	Limit int      `json:"limit,omitempty" jsonschema:"1-50, default 10"`
	Tags  []string `json:"tags,omitempty" jsonschema:"only entries with all these tags"`
}

type recallHit struct {
	Slug      string   `json:"slug"`
	Title     string   `json:"title"`
	Version   int      `json:"version"`
	Score     float64  `json:"score"`
	Snippet   string   `json:"snippet"`
	Tags      []string `json:"tags"`
	UpdatedAt string   `json:"updated_at"`
}

type recallResult struct {
	Hits []recallHit `json:"hits"`
}

type getArgs struct {
	Slug    string `json:"slug"`
	Version int    `json:"version,omitempty" jsonschema:"default: latest"`
}

type getResult struct {
	Slug          string   `json:"slug"`
	Version       int      `json:"version"`
	Title         string   `json:"title"`
	Content       string   `json:"content"`
	Tags          []string `json:"tags"`
	Agent         string   `json:"agent"`
	CreatedAt     string   `json:"created_at"`
	LatestVersion int      `json:"latest_version"`
}

type listArgs struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only slugs starting with this"`
	Tag    string `json:"tag,omitempty"`
	Limit  int    `json:"limit,omitempty" jsonschema:"1-200, default 50"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

type listEntry struct {
	Slug      string   `json:"slug"`
	Title     string   `json:"title"`
	Version   int      `json:"version"`
	Tags      []string `json:"tags"`
	UpdatedAt string   `json:"updated_at"`
}

type listResult struct {
	Entries    []listEntry `json:"entries"`
	NextCursor string      `json:"next_cursor"`
}

type historyArgs struct {
	Slug  string `json:"slug"`
	Limit int    `json:"limit,omitempty" jsonschema:"1-200, default 50"`
}

type historyVersion struct {
	Version   int    `json:"version"`
	Title     string `json:"title"`
	Agent     string `json:"agent"`
	CreatedAt string `json:"created_at"`
	Deleted   bool   `json:"deleted"`
	Size      int    `json:"size"`
}

type historyResult struct {
	Versions []historyVersion `json:"versions"`
}

type forgetArgs struct {
	Slug            string `json:"slug"`
	ExpectedVersion *int   `json:"expected_version,omitempty" jsonschema:"fail unless the latest version is this"`
}

type forgetResult struct {
	Slug    string `json:"slug"`
	Version int    `json:"version"`
}

// toolDefs declares the six tools. Annotations: everything but remember and
// forget is read-only; forget is the one destructive call (it hides an entry,
// even though its history stays); nothing reaches outside Munin.
func toolDefs() []mcp.Tool {
	closed := mcp.WithOpenWorldHintAnnotation(false)
	readOnly := func() []mcp.ToolOption {
		return []mcp.ToolOption{
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true),
			closed,
		}
	}
	tools := []mcp.Tool{
		mcp.NewTool("remember",
			mcp.WithDescription("Store a new version of an entry. Returns its version."),
			mcp.WithInputSchema[rememberArgs](),
			mcp.WithOutputSchema[rememberResult](),
			mcp.WithDestructiveHintAnnotation(false),
			closed,
		),
		mcp.NewTool("recall",
			append([]mcp.ToolOption{
				mcp.WithDescription("Full-text search over live entries; returns snippets. Use get for the full text."),
				mcp.WithInputSchema[recallArgs](),
				mcp.WithOutputSchema[recallResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("get",
			append([]mcp.ToolOption{
				mcp.WithDescription("Read an entry: its latest version or the given one."),
				mcp.WithInputSchema[getArgs](),
				mcp.WithOutputSchema[getResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("list",
			append([]mcp.ToolOption{
				mcp.WithDescription("List live entries by slug, one page at a time."),
				mcp.WithInputSchema[listArgs](),
				mcp.WithOutputSchema[listResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("history",
			append([]mcp.ToolOption{
				mcp.WithDescription("List an entry's versions, newest first, forgotten ones included."),
				mcp.WithInputSchema[historyArgs](),
				mcp.WithOutputSchema[historyResult](),
			}, readOnly()...)...,
		),
		mcp.NewTool("forget",
			mcp.WithDescription("Hide an entry by writing a tombstone version; its history stays."),
			mcp.WithInputSchema[forgetArgs](),
			mcp.WithOutputSchema[forgetResult](),
			mcp.WithDestructiveHintAnnotation(true),
			mcp.WithIdempotentHintAnnotation(false),
			closed,
		),
	}
	for i := range tools {
		tightenArrays(tools[i].OutputSchema.Properties)
	}
	return tools
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
