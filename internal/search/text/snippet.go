package text

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Snippet shape. A snippet is plain text: at most snippetRunes runes of the
// content's visible text (its Markdown rendered, plain.go), whitespace
// collapsed to single spaces, "…" where the text was cut, and matched words
// wrapped in « and » (at most maxMarks of them). So a snippet is never
// longer than 1+160+2*16+1 = 194 runes.
const (
	snippetRunes = 160
	contextRunes = 30 // kept before the first match, so it reads in context
	maxMarks     = 16
	markOpen     = "«"
	markClose    = "»"
	ellipsis     = "…"
)

// Span is a matched term's byte range in the content.
type Span struct{ Start, End int }

// Snippet returns the window of content's visible text with the most
// matches, marked; or the text's beginning when nothing matched in it (a
// title or tag hit). spans are byte ranges in content (Marker.Spans); each
// mark lands on the same word in the visible text. Only the blocks around
// the best window of the raw content are rendered (region, plain.go).
func Snippet(content string, spans []Span) string {
	spans = cleanSpans(content, spans)
	from, to := region(content, spans)
	var local []Span
	for _, s := range spans {
		if s.Start >= from && s.End <= to {
			local = append(local, Span{s.Start - from, s.End - from})
		}
	}
	p := plainOf(content[from:to])
	return window(p.text, p.spans(local), from > 0, strings.TrimSpace(content[to:]) != "")
}

// window is Snippet of a plain text and spans in it; before and after say
// that the content goes on before and after the text.
func window(content string, spans []Span, before, after bool) string {
	spans = cleanSpans(content, spans)
	if len(spans) == 0 {
		end := advance(content, 0, snippetRunes)
		end = cutAtSpace(content, 0, end)
		return render(content, 0, end, nil, before, after)
	}
	best := bestSpan(content, spans)
	start := backToWord(content, spans[best].Start)
	end := advance(content, start, snippetRunes)
	// A matched word longer than the window (a class path, a base64 blob)
	// ends past it: the snippet then shows it cut, unmarked.
	end = cutAtSpace(content, min(spans[best].End, end), end)
	var inside []Span
	for _, s := range spans[best:] {
		if s.End > end || len(inside) == maxMarks {
			break
		}
		inside = append(inside, s)
	}
	return render(content, start, end, inside, before, after)
}

// bestSpan is the match the best window starts at: the one followed by the
// most matches within snippetRunes-contextRunes runes; the earliest wins a
// tie. The spans' rune offsets are counted once, so a long content with many
// matches is walked once, not once per match.
func bestSpan(content string, spans []Span) int {
	type runeSpan struct{ start, end int }
	at := make([]runeSpan, len(spans))
	pos, runes := 0, 0
	for k, s := range spans {
		runes += utf8.RuneCountInString(content[pos:s.Start])
		at[k].start = runes
		runes += utf8.RuneCountInString(content[s.Start:s.End])
		at[k].end = runes
		pos = s.End
	}
	best, bestN, j := 0, 0, 0
	for i := range at {
		j = max(j, i)
		for j < len(at) && at[j].end-at[i].start <= snippetRunes-contextRunes {
			j++
		}
		if n := j - i; n > bestN {
			best, bestN = i, n
		}
	}
	return best
}

// cleanSpans sorts spans and drops those out of range, not on rune boundaries
// or overlapping an earlier one (the English and German fields often report
// the same word).
func cleanSpans(content string, spans []Span) []Span {
	slices.SortFunc(spans, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	out := spans[:0]
	last := -1
	for _, s := range spans {
		if s.Start < 0 || s.Start < last || s.Start >= s.End || s.End > len(content) ||
			!utf8.RuneStart(content[s.Start]) || (s.End < len(content) && !utf8.RuneStart(content[s.End])) {
			continue
		}
		out = append(out, s)
		last = s.End
	}
	return out
}

// advance returns the byte offset n runes after from (or the end).
func advance(s string, from, n int) int {
	i := from
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// backToWord moves up to contextRunes runes back from pos and then forward to
// the start of a word, so the snippet does not begin mid-word.
func backToWord(s string, pos int) int {
	start := pos
	for n := 0; n < contextRunes && start > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:start])
		start -= size
	}
	if start == 0 {
		return 0
	}
	if i := strings.IndexFunc(s[start:pos], unicode.IsSpace); i >= 0 {
		_, size := utf8.DecodeRuneInString(s[start+i:])
		return start + i + size
	}
	return pos
}

// cutAtSpace moves end back to the last space after min, so the snippet does
// not end mid-word; it keeps end if the content ends there or no space fits.
func cutAtSpace(s string, min, end int) int {
	if end >= len(s) {
		return len(s)
	}
	if i := strings.LastIndexFunc(s[min:end], unicode.IsSpace); i > 0 {
		return min + i
	}
	return end
}

// render writes s[start:end] with marks around spans and collapsed spaces;
// before and after say that the content goes on beyond s.
func render(s string, start, end int, marks []Span, before, after bool) string {
	var b strings.Builder
	// The window's bytes, its marks and ellipses: one allocation.
	b.Grow(end - start + len(marks)*(len(markOpen)+len(markClose)) + 2*len(ellipsis))
	if start > 0 || before {
		b.WriteString(ellipsis)
	}
	pos := start
	for _, m := range marks {
		writeCollapsed(&b, s[pos:m.Start])
		b.WriteString(markOpen)
		writeCollapsed(&b, s[m.Start:m.End])
		b.WriteString(markClose)
		pos = m.End
	}
	writeCollapsed(&b, s[pos:end])
	out := strings.TrimSpace(b.String())
	if after || end < len(s) && strings.TrimSpace(s[end:]) != "" {
		out += " " + ellipsis
	}
	return out
}

// writeCollapsed writes s with each run of whitespace (newlines of Markdown
// content included) as a single space. Runs of other runes are written at
// once rather than rune by rune (a snippet's text is mostly such runs;
// render grows the builder for all of them once); a byte that is not UTF-8
// is written as U+FFFD, as writing its decoded rune would
// (TestWriteCollapsedAsRuneByRune).
func writeCollapsed(b *strings.Builder, s string) {
	space := false
	for i := 0; i < len(s); {
		j, r, size := i, rune(s[i]), 1
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				r, size = rune(c), 1
				if asciiSpace[c] {
					break
				}
			} else if r, size = utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(r) || (r == utf8.RuneError && size == 1) {
				break
			}
			j += size
		}
		if j > i {
			if space {
				writeSpace(b)
			}
			space = false
			b.WriteString(s[i:j])
		}
		if j == len(s) {
			break
		}
		if r == utf8.RuneError && size == 1 {
			if space {
				writeSpace(b)
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
		i = j + size
	}
	if space {
		writeSpace(b)
	}
}

// writeSpace writes one space unless the text is empty or ends in one, so
// that whitespace split across pieces still collapses.
func writeSpace(b *strings.Builder) {
	if s := b.String(); s != "" && s[len(s)-1] != ' ' {
		b.WriteByte(' ')
	}
}
