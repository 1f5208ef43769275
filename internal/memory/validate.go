package memory

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

var tagRe = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._:/-]*$`)

// ValidateName checks a workspace or project name. It is called before any
// file path is built from the name, so it is the guard against path traversal.
func ValidateName(kind, name string) error {
	if !lowerWord(name, 63, "-") {
		return Errorf(CodeInvalid, "%s name %q must match ^[a-z0-9][a-z0-9-]{0,62}$", kind, name)
	}
	return nil
}

// ValidateSlug checks an entry slug: the pattern, and no empty or ".." segment.
func ValidateSlug(slug string) error {
	if !lowerWord(slug, 128, "._/-") {
		return Errorf(CodeInvalid, "slug %q must match ^[a-z0-9][a-z0-9._/-]{0,127}$", slug)
	}
	for seg, rest, more := "", slug, true; more; {
		seg, rest, more = strings.Cut(rest, "/")
		if seg == "" || seg == ".." || seg == "." {
			return Errorf(CodeInvalid, "slug %q has an empty, '.' or '..' segment", slug)
		}
	}
	return nil
}

// lowerWord reports whether s is 1 to max bytes of [a-z0-9], after the
// first also of the bytes in more: the patterns of names and slugs, checked
// by a loop because every store call checks them (a regexp cost 0.4-0.7 µs
// a name).
func lowerWord(s string, max int, more string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && strings.IndexByte(more, c) >= 0) {
			return false
		}
	}
	return true
}

// ValidateTags checks tags; tags are case-sensitive words like "db" or "team:infra".
func ValidateTags(tags []string) error {
	if len(tags) > MaxTags {
		return Errorf(CodeInvalid, "at most %d tags, got %d", MaxTags, len(tags))
	}
	for _, t := range tags {
		if len(t) > MaxTag || !tagRe.MatchString(t) {
			return Errorf(CodeInvalid, "tag %q must be 1-%d letters, digits or ._:/- and start with a letter or digit", t, MaxTag)
		}
	}
	return nil
}

// ValidateText checks that a free-text field is valid UTF-8 without NUL bytes
// and at most max bytes long; too long is CodeTooLarge.
func ValidateText(field, s string, max int) error {
	if len(s) > max {
		return Errorf(CodeTooLarge, "%s is %d bytes, the limit is %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return Errorf(CodeInvalid, "%s is not valid UTF-8", field)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Errorf(CodeInvalid, "%s contains a NUL byte", field)
	}
	return nil
}
