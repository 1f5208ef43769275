package memory

import "unicode/utf8"

// CheckJSONText refuses JSON input that Go's decoder would silently alter:
// invalid UTF-8 and escaped halves of UTF-16 surrogate pairs both become
// U+FFFD, so text the client never sent would be stored. JSON must be UTF-8
// (RFC 8259); such input is a client mistake.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return Errorf(CodeInvalid, "JSON text is not valid UTF-8")
	}
	if hasLoneSurrogate(b) {
		return Errorf(CodeInvalid, "JSON text escapes half of a UTF-16 surrogate pair (e.g. \\ud800 alone)")
	}
	return nil
}

// hasLoneSurrogate reports whether a JSON text escapes half of a UTF-16
// surrogate pair (e.g. "\ud800" alone). Backslashes only occur inside JSON
// strings, so a flat scan is exact.
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(b) || b[i] != 'u' {
			continue
		}
		r, ok := hex4(b, i+1)
		if !ok {
			continue // malformed escape: the JSON decoder reports it
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // low half without a high half
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 parses four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
