package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// shortIDLen is how many hex digits of a session id a log line may show:
// enough to follow one session through the log, too few to use it.
const shortIDLen = 8

// sessionIDPattern finds session ids (ours, and anything shaped like them)
// inside longer text such as error messages.
var sessionIDPattern = regexp.MustCompile(sessionPrefix + `([0-9a-fA-F]{` + fmt.Sprint(shortIDLen) + `})[0-9a-fA-F]*`)

// shortID is the loggable form of a session id.
func shortID(id string) string {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok {
		rest, id = id, ""
	} else {
		id = sessionPrefix
	}
	if len(rest) <= shortIDLen {
		return id + rest
	}
	return id + rest[:shortIDLen] + "…"
}

// redactSessionIDs wraps a log handler so that no session id reaches it
// whole. A session id is a bearer credential for its session; mcp-go logs
// it in several places (the idle sweeper at INFO, errors about sampling
// responses and termination), so the logger handed to mcp-go is wrapped
// rather than each place patched. Attributes named like a session are
// shortened whatever they hold; any other text is searched for ids.
func redactSessionIDs(h slog.Handler) slog.Handler { return redactingHandler{h} }

type redactingHandler struct{ next slog.Handler }

func (h redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redactText(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return redactingHandler{h.next.WithAttrs(red)}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			red[i] = redactAttr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindString:
		if strings.Contains(strings.ToLower(a.Key), "session") {
			return slog.String(a.Key, shortID(v.String()))
		}
		return slog.String(a.Key, redactText(v.String()))
	case slog.KindAny:
		// Errors and values print themselves; an id may be inside.
		if s := fmt.Sprint(v.Any()); strings.Contains(s, sessionPrefix) {
			return slog.String(a.Key, redactText(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func redactText(s string) string {
	if !strings.Contains(s, sessionPrefix) {
		return s
	}
	return sessionIDPattern.ReplaceAllString(s, sessionPrefix+"${1}…")
}
