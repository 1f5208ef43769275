package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidateAgent checks an agent name: 1..MaxAgent bytes of printable UTF-8
// (no control, format or bidi characters, no spaces but the ASCII one).
// Key creation and import both check agent names here.
func ValidateAgent(agent string) error {
	if agent == "" || len(agent) > MaxAgent {
		return Errorf(CodeInvalid, "agent name must be 1-%d bytes, got %d", MaxAgent, len(agent))
	}
	if !utf8.ValidString(agent) {
		return Errorf(CodeInvalid, "agent name is not valid UTF-8")
	}
	for _, r := range agent {
		if unicode.IsControl(r) || !unicode.IsPrint(r) {
			return Errorf(CodeInvalid, "agent name %q contains a control or non-printable character", agent)
		}
	}
	return nil
}

// ValidateTitle checks a title: text (ValidateText) of at most MaxTitle
// bytes on one line, without control characters (newline, tab, ESC …),
// line separators or bidi controls (U+202E …), which would let a title
// rewrite a terminal or reorder how a list reads. remember and import both
// check titles here.
func ValidateTitle(title string) error {
	if err := ValidateText("title", title, MaxTitle); err != nil {
		return err
	}
	if i := strings.IndexFunc(title, breaksLine); i >= 0 {
		r, _ := utf8.DecodeRuneInString(title[i:])
		return Errorf(CodeInvalid, "title contains %U at byte %d: a title is one line without control or bidi characters", r, i)
	}
	return nil
}

// OneLine drops from s what ValidateTitle refuses, for titles derived from content.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if breaksLine(r) {
			return -1
		}
		return r
	}, s)
}

// BreaksLine tells whether r is one of what OneLine drops.
func BreaksLine(r rune) bool { return breaksLine(r) }

// breaksLine: control characters (C0, DEL, C1), line and paragraph
// separators, and the bidi controls.
func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}
