package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestValidateSlug(t *testing.T) {
	for _, tc := range []struct {
		slug string
		ok   bool
	}{
		{"decisions/db-choice", true},
		{"a", true},
		{"notes/2026.11.30_v2", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"/abs", false},
		{"Upper", false},
		{"a//b", false},
		{"a/../b", false},
		{"a/..", false},
		{"a/./b", false},
		{"a/", false},
		{"-start", false},
		{"a b", false},
		{"a\x00b", false},
		{"ä", false},
		{"a\\b", false},
	} {
		err := ValidateSlug(tc.slug)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateSlug(%q) = %v, want ok=%v", tc.slug, err, tc.ok)
		}
		if err != nil && ErrorCode(err) != CodeInvalid {
			t.Errorf("ValidateSlug(%q) code %s, want invalid", tc.slug, ErrorCode(err))
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"team-7", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"-x", false},
		{"../etc", false},
		{"a.b", false},
		{"_control", false},
		{"A", false},
		{"a/b", false},
	} {
		if err := ValidateName("workspace", tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidateTagsAndText(t *testing.T) {
	if err := ValidateTags([]string{"db", "team:infra", "Größe"}); err != nil {
		t.Errorf("good tags refused: %v", err)
	}
	for _, bad := range [][]string{{""}, {" x"}, {"a b"}, {strings.Repeat("t", MaxTag+1)}, make([]string, MaxTags+1)} {
		if err := ValidateTags(bad); ErrorCode(err) != CodeInvalid {
			t.Errorf("ValidateTags(%q) = %v, want invalid", bad, err)
		}
	}
	if err := ValidateText("content", strings.Repeat("x", 11), 10); ErrorCode(err) != CodeTooLarge {
		t.Errorf("oversized text: %v, want too_large", err)
	}
	if err := ValidateText("content", "a\xffb", 10); ErrorCode(err) != CodeInvalid {
		t.Errorf("invalid UTF-8: %v, want invalid", err)
	}
	if err := ValidateText("content", "a\x00b", 10); ErrorCode(err) != CodeInvalid {
		t.Errorf("NUL byte: %v, want invalid", err)
	}
}

func TestErrorCodesAndPublicMessage(t *testing.T) {
	e := Errorf(CodeConflict, "%s is at version %d, expected %d", "decisions/db-choice", 4, 3)
	wrapped := fmt.Errorf("put entry: %w", e)
	if ErrorCode(wrapped) != CodeConflict {
		t.Errorf("code through wrapping = %s", ErrorCode(wrapped))
	}
	if got := PublicMessage(wrapped); got != "conflict: decisions/db-choice is at version 4, expected 3" {
		t.Errorf("public message %q", got)
	}
	secret := errors.New("disk /var/secret failed")
	for _, err := range []error{secret, Internal(secret)} {
		if ErrorCode(err) != CodeInternal || strings.Contains(PublicMessage(err), "secret") {
			t.Errorf("internal error leaks: %q (code %s)", PublicMessage(err), ErrorCode(err))
		}
	}
	if ErrorCode(nil) != "" {
		t.Error("nil error has a code")
	}
}
