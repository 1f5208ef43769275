package reqlog

import (
	"context"
	"encoding"
	"fmt"
	"log/slog"
)

// Rewrite wraps a log handler so that every text a record prints passes
// through fn first: the message (key slog.MessageKey), string attributes,
// and attributes that print as text (errors by Error, text marshalers by
// MarshalText, anything else by %+v, as the text handler prints them),
// inside groups and in attributes bound with With. Numbers, times and
// durations pass unchanged. key is the attribute's own key, so that fn can
// treat a field by its name. Safe is Rewrite with Clean; a package with its
// own secrets in log lines (mcpserver's session ids) can wrap the same way.
func Rewrite(h slog.Handler, fn func(key, text string) string) slog.Handler {
	return rewriter{next: h, fn: fn}
}

type rewriter struct {
	next slog.Handler
	fn   func(key, text string) string
}

func (h rewriter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h rewriter) Handle(ctx context.Context, r slog.Record) error {
	if h.unchanged(r) {
		// The common case (every request writes a line): nothing to
		// rewrite, so the record goes on as it is, without a copy.
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.fn(slog.MessageKey, r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// unchanged reports whether fn leaves the record's message and every
// attribute as they are. Only strings and kinds that print no text count;
// anything else (groups, errors, values resolved later) takes the copy.
func (h rewriter) unchanged(r slog.Record) bool {
	if h.fn(slog.MessageKey, r.Message) != r.Message {
		return false
	}
	same := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString:
			s := a.Value.String()
			same = h.fn(a.Key, s) == s
		case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		default:
			same = false
		}
		return same
	})
	return same
}

func (h rewriter) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = h.attr(a)
	}
	return rewriter{next: h.next.WithAttrs(out), fn: h.fn}
}

func (h rewriter) WithGroup(name string) slog.Handler {
	return rewriter{next: h.next.WithGroup(name), fn: h.fn}
}

// attr rewrites every text a attribute prints.
func (h rewriter) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.fn(a.Key, v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]any, len(group))
		for i, g := range group {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.fn(a.Key, x.Error()))
		case encoding.TextMarshaler:
			if b, err := x.MarshalText(); err == nil {
				return slog.String(a.Key, h.fn(a.Key, string(b)))
			}
		case []byte:
			return slog.String(a.Key, h.fn(a.Key, string(x)))
		}
		return slog.String(a.Key, h.fn(a.Key, fmt.Sprintf("%+v", v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
