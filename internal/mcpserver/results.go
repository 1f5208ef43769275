package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// toolFunc is one tool's logic: typed arguments in, the structured result and
// its short text rendering out. The key is already resolved.
type toolFunc[A, R any] func(ctx context.Context, key memory.Key, args A) (R, string, error)

// typed adapts a toolFunc to mcp-go. It replaces mcp.NewStructuredToolHandler,
// whose error texts ("tool execution failed: …", "failed to bind arguments: …")
// would hide the code that every Munin error must start with.
func typed[A, R any](log *slog.Logger, tool string, fn toolFunc[A, R]) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The HTTP auth middleware (or ServeStdio) puts the key in the
		// context; a missing one means the handler was mounted without it.
		key, err := service.KeyFrom(ctx)
		if err != nil {
			return errorResult(log, tool, err), nil
		}
		var args A
		if err := bindArgs(req, &args); err != nil {
			return errorResult(log, tool, err), nil
		}
		res, text, err := fn(ctx, key, args)
		if err != nil {
			return errorResult(log, tool, err), nil
		}
		return mcp.NewToolResultStructured(res, text), nil
	}
}

// bindArgs decodes the call's arguments strictly: unknown names and wrong
// JSON types become invalid errors that name the argument. Input schema
// validation normally catches these first; this is the second line.
func bindArgs(req mcp.CallToolRequest, target any) error {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		if r, ok := req.Params.Arguments.(json.RawMessage); ok {
			raw = r
		} else {
			b, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return memory.Errorf(memory.CodeInvalid, "arguments must be a JSON object")
			}
			raw = b
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		return argumentError(err)
	}
	return nil
}

// argumentError turns a JSON decoding error into an invalid error naming the argument.
func argumentError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return memory.Errorf(memory.CodeInvalid, "arguments must be a JSON object, got %s", typeErr.Value)
		}
		return memory.Errorf(memory.CodeInvalid, "argument %s must be %s, got %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return memory.Errorf(memory.CodeInvalid, "unknown argument %s", name)
	}
	return memory.Errorf(memory.CodeInvalid, "arguments are not valid JSON: %v", err)
}

// jsonTypeName says a Go kind the way a JSON client thinks of it.
func jsonTypeName(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "slice" || kind == "array":
		return "an array"
	case kind == "bool":
		return "a boolean"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "struct" || kind == "map":
		return "an object"
	}
	return kind
}

// errorResult is the one mapping from an error to an MCP tool error: isError
// with text "code: message". Internal details are logged here, never sent.
func errorResult(log *slog.Logger, tool string, err error) *mcp.CallToolResult {
	if memory.ErrorCode(err) == memory.CodeInternal {
		log.Error("mcp tool failed", "tool", tool, "err", err)
	}
	return mcp.NewToolResultError(memory.PublicMessage(err))
}

// Prefixes of the errors mcp-go itself writes into tool results.
const (
	inputValidationPrefix  = "input schema validation failed: "
	outputValidationPrefix = "output schema validation failed: "
)

// recodeValidationErrors rewrites the tool errors that mcp-go's schema
// validation produces (before or after our handler runs, so typed cannot
// shape them) into Munin's "code: message" form: "input schema validation
// failed: /limit: got string, want integer" becomes "invalid: argument limit:
// got string, want integer".
func recodeValidationErrors(log *slog.Logger) func(ctx context.Context, id any, req *mcp.CallToolRequest, result any) {
	return func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || !res.IsError || len(res.Content) != 1 {
			return
		}
		text, ok := res.Content[0].(mcp.TextContent)
		if !ok {
			return
		}
		switch {
		case strings.HasPrefix(text.Text, inputValidationPrefix):
			text.Text = "invalid: " + describeViolations(strings.TrimPrefix(text.Text, inputValidationPrefix))
		case strings.HasPrefix(text.Text, outputValidationPrefix):
			// Our result broke our own schema: a bug, not the caller's fault.
			log.Error("mcp result does not match its output schema", "tool", req.Params.Name, "err", text.Text)
			text.Text = "internal: " + text.Text
		default:
			return
		}
		res.Content[0] = text
	}
}

// describeViolations turns "/limit: got string, want integer; <root>: missing
// property 'slug'" into "argument limit: got string, want integer; missing
// property 'slug'".
func describeViolations(s string) string {
	parts := strings.Split(s, "; ")
	for i, p := range parts {
		loc, msg, ok := strings.Cut(p, ": ")
		if !ok {
			continue
		}
		switch {
		case loc == "<root>":
			parts[i] = msg
		case strings.HasPrefix(loc, "/"):
			parts[i] = "argument " + strings.ReplaceAll(strings.TrimPrefix(loc, "/"), "/", ".") + ": " + msg
		}
	}
	return strings.Join(parts, "; ")
}

// stamp renders a time the same way in every result: UTC, RFC 3339.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nonNil keeps arrays in results from marshaling as null (the output schemas say array).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// oneLine flattens s to a single line of at most n runes for text renderings.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// tagList renders tags as " [a, b]" or "" when there are none.
func tagList(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return fmt.Sprintf(" [%s]", strings.Join(tags, ", "))
}
