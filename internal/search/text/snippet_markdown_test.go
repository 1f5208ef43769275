package text

import (
	"strings"
	"testing"
)

// A snippet shows the text a reader sees, not the Markdown: emphasis,
// headings, links, code, lists, quotes and tables come out as their words,
// and the marks (found in the raw content, as Marker.Spans finds them) sit
// on the same words.
func TestSnippetIsPlainTextWithMarks(t *testing.T) {
	for _, c := range []struct {
		name, content string
		words         []string
		want          string
		not           []string
	}{
		{"emphasis", "We chose **SQLite** over _Postgres_ for *now*.", []string{"SQLite"},
			"We chose «SQLite» over Postgres for now.", []string{"*", "_"}},
		{"heading", "# Database decision\n\nSQLite it is.", []string{"Database"},
			"«Database» decision — SQLite it is.", []string{"#"}},
		{"heading with its own colon", "## Steps:\n\nRun the backup.", []string{"backup"},
			"Steps: Run the «backup».", []string{"#", "—"}},
		{"link", "Read [the WAL notes](https://sqlite.org/wal.html) first.", []string{"WAL"},
			"Read the «WAL» notes first.", []string{"](", "https"}},
		{"code", "Run `munin reindex` and then:\n\n```sh\nmunin serve --data x\n```\n", []string{"reindex", "serve"},
			"Run munin «reindex» and then: munin «serve» --data x", []string{"`"}},
		{"lists", "- first item\n- second *item*\n\n1. one step\n2. next step\n", []string{"second", "next"},
			"first item «second» item one step «next» step", []string{"- ", "1.", "2."}},
		{"quote and table", "> quoted Kafka\n\n| broker | lag |\n|---|---|\n| kafka-1 | 3 |\n", []string{"Kafka", "kafka"},
			"quoted «Kafka» broker lag «kafka»-1 3", []string{">", "|", "---"}},
		{"escapes and html", `Use \*stars\* <b>bold</b> here.`, []string{"bold"},
			"Use *stars* «bold» here.", []string{`\`, "<b>"}},
		{"plain content", "no markdown at all here, just words", []string{"words"},
			"no markdown at all here, just «words»", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Snippet(c.content, spansOf(c.content, c.words...))
			if got != c.want {
				t.Errorf("snippet\n got %q\nwant %q", got, c.want)
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("snippet %q still shows %q", got, n)
				}
			}
		})
	}
}

// The window is chosen in the visible text: a match far into a long note
// is shown in context, its mark on it, and the snippet stays bounded.
func TestSnippetOfLongMarkdownMarksTheMatch(t *testing.T) {
	filler := strings.Repeat("- **lorem** ipsum [dolor](https://example.org/sit) amet\n", 40)
	content := "# Notes\n\n" + filler + "\nThe **replication** lag grew.\n"
	got := Snippet(content, spansOf(content, "replication"))
	if !strings.Contains(got, "The «replication» lag grew.") || strings.Contains(got, "**") || strings.Contains(got, "](") {
		t.Fatalf("snippet %q, want the marked sentence as plain text", got)
	}
	if !strings.HasPrefix(got, "…") {
		t.Fatalf("snippet %q does not say it was cut", got)
	}
}
