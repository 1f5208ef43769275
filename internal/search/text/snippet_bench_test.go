package text

import (
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/search/searchtest"
)

// markdownNote is a typical agent note: a heading, emphasis, a link, code
// and a list (about 1 KB).
const markdownNote = "# Database decision\n\nWe chose **SQLite** in WAL mode over [Postgres](https://www.postgresql.org/) " +
	"because every workspace is one file and backups are a `VACUUM INTO` away.\n\n" +
	"## Consequences\n\n- one writer connection per file, group commit for throughput\n" +
	"- reads never wait for the writer (separate read pool)\n- `busy_timeout` first, then `journal_mode=WAL`\n\n" +
	"```sh\nmunin backup --out /var/backups/munin\n```\n\n" +
	"> Replication latency stays below a second with synchronous replication; see the *cluster* notes.\n\n" +
	"1. measure the latency of the backup\n2. check the replication lag under load\n"

// BenchmarkSnippet is the snippet of one hit, its spans found as the
// recall finds them (Marker.Spans): a Markdown note, 64 KB of Markdown
// (the largest content), and 64 KB of prose without Markdown.
func BenchmarkSnippet(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := strings.Repeat(markdownNote+"\n", (64<<10)/(len(markdownNote)+1))
	for _, c := range []struct{ name, content, query string }{
		{"note", markdownNote, "replication latency"},
		{"markdown64k", big, "replication latency"},
		{"prose64k", searchtest.Prose(rng, 64<<10), "Datenbank index"},
	} {
		spans := NewMarker(c.query).Spans(c.content)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Snippet(c.content, append([]Span(nil), spans...))
			}
		})
	}
}
