package service

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"munin/internal/memory"
)

// DerivedTitle is the title Remember gives content written without one: its
// first non-empty line without Markdown heading marks, at most 80
// characters. The web UI's edit form uses it to tell a derived title (which
// it leaves empty, so a new first line derives a new title) from one a
// person set.
func DerivedTitle(content string) string { return titleFromContent(content) }

// maxDerivedTitle is the most characters a derived title has; a longer
// first line is cut to one less and "…".
const maxDerivedTitle = 80

// titleFromContent takes the first non-empty line, without what a title
// may not hold (memory.OneLine), surrounding spaces and Markdown heading
// marks, cut to maxDerivedTitle characters: an entry always has something to
// show in lists, and a derived title passes ValidateTitle, or an export of
// the entry could not be imported.
//
// It reads the content only up to the title's end and allocates only the
// title. Every remember without a title derives one before the byte budget
// is asked: each 64 KB line a write key sent and the budget refused cost a
// pass over the whole line and its runes (256 KiB), 2.4 ms of CPU, now 3 µs
// and 96 bytes (BenchmarkTitleFromContent64K, 2026-12-01). Fifty a second
// took the CPU other projects' recalls waited for (hostile load test,
// attack 2).
func titleFromContent(content string) string {
	for rest := content; ; {
		line, after, more := strings.Cut(rest, "\n")
		if t := titleOfLine(line); t != "" || !more {
			return t
		}
		rest = after
	}
}

// titleOfLine is strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(
// memory.OneLine(line)), "#")), cut to maxDerivedTitle characters, in one
// pass that stops once the cut is certain.
func titleOfLine(line string) string {
	const (
		leadSpace = iota // before the heading marks
		marks            // in the heading marks
		markSpace        // after them
		text             // the title itself
	)
	state := leadSpace
	var (
		buf   = make([]byte, 0, utf8.UTFMax*maxDerivedTitle) // the title so far (on the stack)
		n     int                                            // runes in buf
		cut79 int                                            // len(buf) after maxDerivedTitle-1 runes
	)
	for _, r := range line { // invalid UTF-8 reads as U+FFFD, as in strings.Map
		if memory.BreaksLine(r) {
			continue // OneLine drops it before anything is trimmed
		}
		switch state {
		case leadSpace:
			if unicode.IsSpace(r) {
				continue
			}
			if r == '#' {
				state = marks
				continue
			}
		case marks:
			if r == '#' {
				continue
			}
			if unicode.IsSpace(r) {
				state = markSpace
				continue
			}
		case markSpace:
			if unicode.IsSpace(r) {
				continue
			}
		}
		state = text
		if n == maxDerivedTitle {
			if unicode.IsSpace(r) {
				continue // trailing space is trimmed; text after it is not
			}
			return string(buf[:cut79]) + "…"
		}
		buf = utf8.AppendRune(buf, r)
		if n++; n == maxDerivedTitle-1 {
			cut79 = len(buf)
		}
	}
	return strings.TrimRightFunc(string(buf), unicode.IsSpace)
}
