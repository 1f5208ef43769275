package memory

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateSlug: whatever ValidateSlug accepts is a safe relative path
// inside any directory — no traversal, no absolute path, only the allowed bytes.
func FuzzValidateSlug(f *testing.F) {
	for _, s := range []string{"decisions/db-choice", "a/../b", "..", "a//b", "/etc/passwd", "a\x00b", "A", "ä/ö", strings.Repeat("a/", 70),
		"a.", "a/.", "0/-", "a\n", "a/b/", strings.Repeat("z", 128), strings.Repeat("z", 129), "_a", ".a", "a_b.c-d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, slug string) {
		if got, want := ValidateSlug(slug) == nil, slugRe.MatchString(slug) && !hasBadSegment(slug); got != want {
			t.Fatalf("ValidateSlug(%q) accepts: %v, the pattern: %v", slug, got, want)
		}
		if ValidateSlug(slug) != nil {
			return
		}
		if len(slug) == 0 || len(slug) > 128 || !utf8.ValidString(slug) {
			t.Fatalf("accepted %q", slug)
		}
		for _, seg := range strings.Split(slug, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", slug, seg)
			}
		}
		base := "/data/ws"
		if p := filepath.Join(base, slug); !strings.HasPrefix(p, base+"/") {
			t.Fatalf("slug %q escapes to %q", slug, p)
		}
		for _, r := range slug {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._/-", r)) {
				t.Fatalf("accepted %q with %q", slug, r)
			}
		}
	})
}

// The patterns ValidateSlug and ValidateName check without a regexp.
var (
	slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,127}$`)
	nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// hasBadSegment reports an empty, "." or ".." segment of slug.
func hasBadSegment(slug string) bool {
	for _, seg := range strings.Split(slug, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// FuzzValidateName: an accepted workspace name always yields a file directly
// inside the data directory that cannot be the control database.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"default", "_control", "../x", "a.b", "", "-a", strings.Repeat("z", 64), "a\nb",
		strings.Repeat("z", 63), "a-", "0-9", "A", "a_b", "ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := ValidateName("workspace", name) == nil, nameRe.MatchString(name); got != want {
			t.Fatalf("ValidateName(%q) accepts: %v, the pattern: %v", name, got, want)
		}
		if ValidateName("workspace", name) != nil {
			return
		}
		dir := "/data"
		p := filepath.Join(dir, name+".db")
		if filepath.Dir(p) != dir || filepath.Base(p) == "_control.db" || len(name) > 63 {
			t.Fatalf("name %q gives file %q", name, p)
		}
	})
}
