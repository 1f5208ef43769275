package memory

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEmbedText(t *testing.T) {
	cases := []struct {
		name, title string
		tags        []string
		content     string
		want        string
	}{
		{"all", "Backups", []string{"ops", "db"}, "nightly", "Backups\nops, db\nnightly"},
		{"no tags", "Backups", nil, "nightly", "Backups\nnightly"},
	}
	for _, c := range cases {
		if got := EmbedText(c.title, c.tags, c.content); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	long := EmbedText(strings.Repeat("ß", MaxEmbedText+5), []string{"x"}, "y")
	if n := utf8.RuneCountInString(long); n != MaxEmbedText || !utf8.ValidString(long) {
		t.Fatalf("long title: %d runes, valid %v", n, utf8.ValidString(long))
	}
	cut := EmbedText("t", nil, strings.Repeat("€", 3*MaxEmbedText))
	if n := utf8.RuneCountInString(cut); n != MaxEmbedText {
		t.Fatalf("long content: %d runes", n)
	}
}
