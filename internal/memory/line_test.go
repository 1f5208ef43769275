package memory

import "testing"

// TestValidateTitle: one line of text; controls, line separators and bidi
// controls are invalid, and OneLine drops exactly those.
func TestValidateTitle(t *testing.T) {
	for _, title := range []string{"", "Plain title", "Ünïcødé — ok", "family 👨\u200d👩\u200d👧", "a\u00a0b"} {
		if err := ValidateTitle(title); err != nil {
			t.Errorf("ValidateTitle(%q): %v", title, err)
		}
	}
	for _, title := range []string{"a\nb", "a\rb", "a\tb", "\x1b[2J", "a\x7fb", "a\u0085b", "a\u2028b", "a\u202eb", "a\u2066b", "a\u200fb"} {
		if err := ValidateTitle(title); ErrorCode(err) != CodeInvalid {
			t.Errorf("ValidateTitle(%q) = %v, want invalid", title, err)
		}
		if clean := OneLine(title); ValidateTitle(clean) != nil || len(clean) >= len(title) {
			t.Errorf("OneLine(%q) = %q", title, clean)
		}
	}
}
