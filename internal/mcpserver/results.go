package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/metrics"
)

// toolFunc is one tool's logic: typed arguments in, the structured result and
// its short text rendering out. The caller is already authenticated.
type toolFunc[A, R any] func(ctx context.Context, c memory.Caller, args A) (R, string, error)

// toolImpl is one tool's mcp-go handler plus the strict argument check it
// runs, kept so that tests can hold the check against the input schema.
type toolImpl struct {
	handler server.ToolHandlerFunc
	check   func(mcp.CallToolRequest) error
}

// typed adapts a toolFunc to mcp-go. It replaces mcp.NewStructuredToolHandler,
// whose error texts ("tool execution failed: …", "failed to bind arguments: …")
// would hide the code that every Munin error must start with.
func typed[A, R any](log *slog.Logger, m *metrics.Metrics, tool string, fn toolFunc[A, R]) toolImpl {
	b := newBinder[A]()
	handler := func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		start := time.Now()
		defer func() { m.ToolCall(tool, outcome(res), time.Since(start)) }()
		// The HTTP auth middleware (or ServeStdio) puts the key in the
		// context; a missing one means the handler was mounted without it.
		c, err := callerOf(ctx)
		if err != nil {
			return errorResult(log, tool, err), nil
		}
		args, err := checked(b, req)
		if err != nil {
			return errorResult(log, tool, err), nil
		}
		if finishOnEOF(ctx) {
			ctx = context.WithoutCancel(ctx)
		}
		out, text, err := fn(ctx, c, args)
		if err != nil {
			return errorResult(log, tool, err), nil
		}
		return mcp.NewToolResultStructured(out, text), nil
	}
	check := func(req mcp.CallToolRequest) error {
		_, err := checked(b, req)
		return err
	}
	return toolImpl{handler: handler, check: check}
}

// argsChecker is implemented by the arguments of a tool whose rules go
// beyond what the binder checks (review: which arguments an action takes).
type argsChecker interface{ check() error }

// checked binds a call's arguments and runs their own check, if they have
// one.
func checked[A any](b binder[A], req mcp.CallToolRequest) (A, error) {
	args, err := b.bind(req)
	if err != nil {
		return args, err
	}
	if c, ok := any(args).(argsChecker); ok {
		if err := c.check(); err != nil {
			return args, err
		}
	}
	return args, nil
}

// errorResult is the one mapping from an error to an MCP tool error: isError
// with text "code: message". Internal details are logged here, never sent.
func errorResult(log *slog.Logger, tool string, err error) *mcp.CallToolResult {
	if memory.ErrorCode(err) == memory.CodeInternal {
		log.Error("mcp tool failed", "tool", tool, "err", err)
	}
	return mcp.NewToolResultError(memory.PublicMessage(err))
}

// when renders a time for the text content: to the second is what a reader needs.
func when(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// count renders "1 hit", "3 hits".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// oneLine flattens s to a single line of at most n runes for text renderings
// (writeOneLine).
func oneLine(s string, n int) string {
	var b strings.Builder
	writeOneLine(&b, s, n)
	return b.String()
}

// tagList renders tags as " [a, b]" or "" when there are none.
func tagList(tags []string) string {
	var b strings.Builder
	writeTagList(&b, tags)
	return b.String()
}

// outcome is the metrics label of a result: "ok", or the code its error
// text starts with.
func outcome(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError {
		return "ok"
	}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			if code, _, found := strings.Cut(tc.Text, ": "); found {
				return code
			}
		}
	}
	return string(memory.CodeInternal)
}
