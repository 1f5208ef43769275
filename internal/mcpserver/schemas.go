package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// The schemas in tools/list are generated from the Go types
// (mcp.WithInputSchema, mcp.WithOutputSchema) and then made lean here: the
// whole answer lands in the context window of every agent that connects
// (budget: under 6,000 bytes, TestListTools), and with stage 11's fields
// and the review tool the generated schemas came to 7,634 bytes.
//
// What goes, and why a client loses nothing it relies on:
//   - Output schemas name every field of a result with its type; below the
//     top level, an array of objects is just that ("hits": array of
//     objects), without the objects' fields, and no schema says
//     additionalProperties, required or a description. Output schemas are
//     read by programs that validate structuredContent (the major clients
//     show the model only a tool's description and input schema), and a
//     schema with fewer constraints accepts every result the generated one
//     accepted: a validating client never rejects a correct result. The
//     full contract — each field of the Go type, the fields without
//     omitempty always present, no null, nothing extra — is checked by this
//     package's tests (decodeExact on every structured result) and written
//     down in docs/mcp-tools.md.
//   - `"type": ["null", X]`, generated for Go pointers and slices, becomes
//     X in output schemas: results are never null there (omitempty pointers
//     are left out, slices are [] — service.nonNil), and the tighter type
//     lets a validating client catch it if one ever is. Input schemas keep
//     the null: a client may send null for an optional argument.
//   - Input schemas drop additionalProperties: false. The server still
//     refuses an unknown argument, by name (binder), before anything runs.
//   - The descriptions of project, as_of, cursor and limit (saidOnce): the
//     instructions of every session say once for all tools what each is
//     (the projects with their defaults — of no use without the caller's
//     list of them, which only the instructions carry — the time format,
//     which next_cursor goes where, each tool's range and default), and an
//     argument out of range is refused naming its bounds. Said once, they
//     left room for the changes tool within the budget (6,383 bytes with
//     every description, 2026-12-03).
//   - get's version: the tool's description says the default is the latest.
// Everything the model reads to call a tool right — argument names, types,
// what is required, the other descriptions — stays as generated.

// leanOutput replaces a tool's generated output schema by its lean form
// (see above), sent as is: mcp.ToolOutputSchema would add "required": []
// to every schema that has none.
func leanOutput(t *mcp.Tool, drop ...string) {
	raw, err := json.Marshal(t.OutputSchema)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	props, _ := s["properties"].(map[string]any)
	for _, name := range drop {
		delete(props, name)
	}
	for _, p := range props {
		if n, ok := p.(map[string]any); ok {
			leanNode(n)
		}
	}
	s = map[string]any{"type": "object", "properties": props}
	if t.RawOutputSchema, err = json.Marshal(s); err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	t.OutputSchema = mcp.ToolOutputSchema{}
}

// leanNode rewrites a top-level output property in place: its type
// tightened, and an object below it (an array's items, a nested struct)
// reduced to {"type": "object"}.
func leanNode(n map[string]any) {
	if ts, ok := n["type"].([]any); ok && len(ts) == 2 && ts[0] == "null" {
		n["type"] = ts[1]
	}
	delete(n, "description")
	if items, ok := n["items"].(map[string]any); ok && items["type"] == "object" {
		n["items"] = map[string]any{"type": "object"}
	}
	if n["type"] == "object" {
		for k := range n {
			if k != "type" {
				delete(n, k)
			}
		}
	}
}

// leanInput drops additionalProperties and the descriptions said
// elsewhere from a generated input schema (see above), keeping the order
// of the arguments: the model reads them in that order, slug before content.
// The result is encoded once, into RawInputSchema: mcp-go's input
// validation encodes a structured InputSchema again on every tools/call
// (schemaJSONFor), about 65 µs per remember.
func leanInput(t *mcp.Tool) {
	var s mcp.ToolInputSchema
	if err := json.Unmarshal(t.RawInputSchema, &s); err != nil {
		panic(fmt.Sprintf("mcpserver: input schema of %s: %v", t.Name, err))
	}
	for name, p := range s.Properties {
		if saidElsewhere(t.Name, name) {
			delete(p.(map[string]any), "description")
		}
	}
	s.AdditionalProperties = nil
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema of %s: %v", t.Name, err))
	}
	t.RawInputSchema = raw
}

// saidOnce are the arguments the instructions describe for every tool
// that takes them (see above).
var saidOnce = []string{"project", "as_of", "cursor", "limit"}

// saidElsewhere reports whether tool's argument arg goes without its
// description in tools/list: the instructions or the tool's own
// description say it (see above).
func saidElsewhere(tool, arg string) bool {
	return slices.Contains(saidOnce, arg) || (tool == "get" && arg == "version")
}
