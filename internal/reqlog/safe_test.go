package reqlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// body is the 43 characters after "munin_" of a key (base64url of 32 bytes).
const body = "Zq3xV9kLmP2rT8wYbN4cH7jD1sF6gA0eQ5uI-o_KhWy"

// logged writes one record through Safe over a text handler and returns
// the output.
func logged(t *testing.T, msg string, args ...any) string {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(Safe(slog.NewTextHandler(&buf, nil)))
	log.Info(msg, args...)
	return buf.String()
}

// TestSafeRedactsKeyBodies: a key's body is redacted however it is
// prefixed — munin_, munin-, a space, nothing — in attributes, errors,
// groups, attributes bound with With, and the message.
func TestSafeRedactsKeyBodies(t *testing.T) {
	for _, s := range []string{
		"/w/x/munin_" + body, "/w/x/munin-" + body, "/w/x/" + body, "MUNIN " + body + " tail",
		"/api/" + strings.ToLower("munin_") + body + "/x",
	} {
		for name, out := range map[string]string{
			"attr":    logged(t, "http request", "path", s),
			"error":   logged(t, "failed", "err", errors.New("open "+s)),
			"group":   logged(t, "x", slog.Group("req", "path", s)),
			"message": logged(t, "got "+s),
		} {
			if strings.Contains(out, body) || strings.Contains(out, body[:20]) {
				t.Errorf("%s %q logged the key body: %s", name, s, out)
			}
			if !strings.Contains(out, "[redacted]") {
				t.Errorf("%s %q: no [redacted] in %s", name, s, out)
			}
		}
	}
	var buf bytes.Buffer
	slog.New(Safe(slog.NewTextHandler(&buf, nil))).With("path", "/"+body).Info("x")
	if strings.Contains(buf.String(), body) {
		t.Errorf("With: key body logged: %s", buf.String())
	}
}

// TestSafeKeepsOrdinaryValues: slugs, hex ids, long lower-case names and
// numbers are logged as they are — only mixed-case runs of a key's length
// look like a key.
func TestSafeKeepsOrdinaryValues(t *testing.T) {
	for _, s := range []string{
		"/w/team/notes/decisions/db-choice",
		"mcp-session-0123456789abcdef0123456789abcdef0123456789abcdef",
		"/w/x/a-very-long-lower-case-slug-that-goes-on-and-on-and-on",
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"ShortMixedCase_Value-42",
	} {
		if out := logged(t, "x", "v", s); !strings.Contains(out, s) || strings.Contains(out, "redacted") {
			t.Errorf("%q was changed: %s", s, out)
		}
	}
}

// TestSafeNeverForgesLevel: a value that carries "level=" (a path with
// %0A decoded to a newline, an error quoting another program's log) cannot
// put a level token into the line; the record's own level is untouched.
func TestSafeNeverForgesLevel(t *testing.T) {
	for _, s := range []string{
		"/x\nlevel=ERROR msg=boom", "/x level=ERROR", "LEVEL=error", "/a\r\ntime=now Level=Warn",
		"\u0130\u0130\u0130level=ERROR", "=level==level=ERROR", "\xff\xfelevel=ERROR",
	} {
		out := logged(t, "http request", "path", s, "err", errors.New(s))
		if n := strings.Count(strings.ToLower(out), "level="); n != 1 {
			t.Errorf("%q: %d level tokens in %s", s, n, out)
		}
		if !strings.HasPrefix(out[strings.Index(out, "level="):], "level=INFO ") {
			t.Errorf("%q: record's own level changed: %s", s, out)
		}
		if strings.Count(out, "\n") != 1 {
			t.Errorf("%q: more than one line: %q", s, out)
		}
	}
}
