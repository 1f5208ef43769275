package reqlog

import (
	"log/slog"
	"strings"

	"munin/internal/memory"
)

// keyBodyLen is the length of a key's body, the base64url text after
// memory.KeyPrefix (32 random bytes).
const keyBodyLen = 43

// Safe wraps a log handler so that no logged text — message, attribute,
// error — can carry a key or forge a log field:
//
//   - a key is redacted with any prefix or none: "munin_…" as
//     memory.RedactKeys does, and also a key's body pasted as "munin-…",
//     after a space or bare. A body is recognized as a run of at least 43
//     base64url characters with upper- and lower-case letters: 32 random
//     bytes lack either with a chance of 1 in 5·10⁹, while slugs, names,
//     hex ids and hashes are of one case. A long mixed-case name without a
//     separator (a directory called TestSomethingVeryLong1234…) is
//     redacted too: in a log, a hidden name costs less than a leaked key.
//   - "level=" inside a value is written "level%3D", so a value (a path
//     with %0A decoded into a newline, an error quoting another program's
//     log) never puts the level token into a line: grep-based alerts on
//     level=ERROR see only records that are errors. The text handler
//     already escapes newlines; this closes the rest.
//
// The server's logger is built on it once (cli), so every layer's lines
// pass through it whatever they log.
func Safe(h slog.Handler) slog.Handler {
	return Rewrite(h, func(_, text string) string { return Clean(text) })
}

// Clean is the text Safe logs for s: keys and key bodies redacted, no
// "level=" token. Text without either is returned as it is.
func Clean(s string) string {
	return noLevelToken(redactBodies(memory.RedactKeys(s)))
}

// redactBodies replaces each mixed-case base64url run of a key body's
// length or longer with "[redacted]".
func redactBodies(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is in b (or b is unused)
	for i := 0; i < len(s); {
		j := i
		upper, lower := false, false
		for ; j < len(s) && isBase64URL(s[j]); j++ {
			upper = upper || ('A' <= s[j] && s[j] <= 'Z')
			lower = lower || ('a' <= s[j] && s[j] <= 'z')
		}
		if j-i >= keyBodyLen && upper && lower {
			b.WriteString(s[last:i])
			b.WriteString("[redacted]")
			last = j
		}
		i = j + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// noLevelToken writes every "level=" (ASCII letters in any case) as
// "level%3D". It compares bytes, not a lower-cased copy: lower-casing may
// change the length of other characters and shift every index after them.
func noLevelToken(s string) string {
	i := indexLevel(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	for ; i >= 0; i = indexLevel(s) {
		b.WriteString(s[:i+len("level")])
		b.WriteString("%3D")
		s = s[i+len("level="):]
	}
	b.WriteString(s)
	return b.String()
}

// indexLevel is the index of the first "level=" in s, in any case, or -1.
func indexLevel(s string) int {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return -1
		}
		j += i
		if j >= len("level") && strings.EqualFold(s[j-len("level"):j], "level") {
			return j - len("level")
		}
		i = j + 1
	}
}
