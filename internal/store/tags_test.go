package store

import (
	"encoding/json"
	"slices"
	"testing"
)

// jsonTags is decodeTags done by encoding/json alone, the reference.
func jsonTags(s string) ([]string, error) {
	tags := []string{}
	if s == "" {
		return tags, nil
	}
	err := json.Unmarshal([]byte(s), &tags)
	if tags == nil {
		tags = []string{}
	}
	return tags, err
}

// sameAsJSON fails unless decodeTags(s) is what encoding/json makes of s.
func sameAsJSON(t *testing.T, s string) {
	t.Helper()
	got, err := decodeTags(s)
	want, werr := jsonTags(s)
	if (err == nil) != (werr == nil) || err == nil && (got == nil || !slices.Equal(got, want)) {
		t.Fatalf("decodeTags(%q) = %q, %v; encoding/json: %q, %v", s, got, err, want, werr)
	}
}

func TestDecodeTags(t *testing.T) {
	for _, tc := range []struct {
		s     string
		plain bool // split without encoding/json
	}{
		{`[]`, true},
		{`["db"]`, true},
		{`["db","team:core","Größe","a/b.c-d_e"]`, true},
		{`["",""]`, true},
		{``, false},
		{`null`, false},
		{`[ ]`, false},
		{`["a", "b"]`, false},
		{`["a\"b"]`, false},
		{`["a\\b"]`, false},
		{`["\u00e4"]`, false},
		{`["a\u003cb"]`, false},
		{`["a,b"]`, false},
		{`[","]`, false},
		{`["a""b"]`, false},
		{`["a",]`, false},
		{`[,"a"]`, false},
		{`["a"`, false},
		{`"a"]`, false},
		{`[1]`, false},
		{`["a",1]`, false},
		{`[null]`, false},
		{"[\"a\tb\"]", false},
		{"[\"\xff\"]", false},
		{`{}`, false},
	} {
		if _, plain := plainTags(tc.s); plain != tc.plain {
			t.Errorf("plainTags(%q) took it: %v, want %v", tc.s, plain, tc.plain)
		}
		sameAsJSON(t, tc.s)
	}
	for _, tags := range [][]string{nil, {}, {"a"}, {"x", "y", "x"}, {"<&>"}, {"a\"b", `c\d`, "e,f", "\u2028", "\x01"}} {
		s, err := encodeTags(tags)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTags(s)
		if err != nil || got == nil || !slices.Equal(got, tags) && len(tags) > 0 {
			t.Errorf("decodeTags(encodeTags(%q)) = %q, %v", tags, got, err)
		}
	}
}

// FuzzDecodeTags: decodeTags answers what encoding/json answers, for any
// text, and round-trips what encodeTags writes.
func FuzzDecodeTags(f *testing.F) {
	for _, s := range []string{`[]`, `["db","ops"]`, `["a,b"]`, `["a\"b"]`, `[","]`, `["",""]`, `null`, `["Größe"]`, "[\"\xff\"]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsJSON(t, s)
		var tags []string
		if json.Unmarshal([]byte(s), &tags) == nil && tags != nil {
			enc, err := encodeTags(tags)
			if err != nil {
				t.Fatal(err)
			}
			sameAsJSON(t, enc)
		}
	})
}
