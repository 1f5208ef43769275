package mcpserver

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"munin/internal/memory"
	"munin/internal/service"
)

// Recall's text is written straight into one builder: a recall answers up
// to 50 hits, and rendering each through fmt and per-field temporary strings
// cost about as much CPU as encoding the structured result (issue 27).

// writeRecallText renders hits as recallText documents, into b.
func writeRecallText(b *strings.Builder, query string, hits []service.Hit) {
	b.Grow(64 + 400*len(hits)) // a hit's line is about 300-400 bytes
	q := strconv.Quote(strings.TrimSpace(query))
	if len(hits) == 0 {
		b.WriteString("no entries match ")
		b.WriteString(q)
	} else {
		b.WriteString(count(len(hits), "hit", "hits"))
		b.WriteString(" for ")
		b.WriteString(q)
		b.WriteByte(':')
	}
	var num [20]byte
	for i, hit := range hits {
		b.WriteByte('\n')
		b.Write(strconv.AppendInt(num[:0], int64(i+1), 10))
		b.WriteString(". ")
		b.WriteString(hit.Slug)
		b.WriteString(" v")
		b.Write(strconv.AppendInt(num[:0], int64(hit.Version), 10))
		b.WriteString(" (")
		b.WriteString(hit.Project)
		b.WriteString(") — ")
		writeOneLine(b, hit.Title, 80)
		writeTagList(b, hit.Tags)
		b.WriteString(matchNote(hit.Match))
		// A hit's explanation, unless matchNote said it already ("by meaning").
		if hit.Explanation != "" && hit.Match != memory.MatchMeaning {
			b.WriteString(" · ")
			writeOneLine(b, hit.Explanation, 80)
		}
		b.WriteString(stateNote(hit.State))
		b.WriteString("\n   ")
		writeOneLine(b, hit.Snippet, 240)
	}
}

// writeOneLine writes s's words joined by single spaces into b, at most n
// runes, the n-th replaced by "…" when more follow.
func writeOneLine(b *strings.Builder, s string, n int) {
	truncate := oneLineRunes(s, n+1) > n
	limit := n
	if truncate {
		limit = n - 1
	}
	written, space := 0, false
	run := -1 // start of the word being copied as it is (not truncating)
	i := 0
	for ; i < len(s) && written < limit; i++ {
		r, size := nextRune(s, i)
		if isSpace(r) {
			if run >= 0 {
				b.WriteString(s[run:i])
				run = -1
			}
			space = written > 0
			i += size - 1
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
			if written++; written == limit {
				break
			}
		}
		switch {
		case truncate:
			b.WriteRune(r) // as []rune(s) would: an invalid byte becomes U+FFFD
		case run < 0:
			run = i
		}
		written++
		i += size - 1
	}
	if run >= 0 {
		b.WriteString(s[run:i])
	}
	if truncate {
		b.WriteString("…")
	}
}

// oneLineRunes counts the runes of s with its whitespace collapsed as
// writeOneLine does, stopping at stop.
func oneLineRunes(s string, stop int) int {
	count, space := 0, false
	for i := 0; i < len(s); {
		r, size := nextRune(s, i)
		i += size
		if isSpace(r) {
			space = count > 0
			continue
		}
		if space {
			count++
			space = false
		}
		if count++; count >= stop {
			return count
		}
	}
	return count
}

// writeTagList writes tags as " [a, b]", nothing when there are none.
func writeTagList(b *strings.Builder, tags []string) {
	if len(tags) == 0 {
		return
	}
	b.WriteString(" [")
	for i, t := range tags {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t)
	}
	b.WriteByte(']')
}

// nextRune decodes the rune at s[i], ASCII without a call.
func nextRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// isSpace is unicode.IsSpace (what strings.Fields splits at), ASCII first.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}
