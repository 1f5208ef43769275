package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// recallTextByFmt is recallText as it was written before the one-pass
// rendering: the reference the renderer must match byte for byte.
func recallTextByFmt(query string, hits []service.Hit) string {
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "no entries match %q", strings.TrimSpace(query))
	} else {
		fmt.Fprintf(&b, "%s for %q:", count(len(hits), "hit", "hits"), strings.TrimSpace(query))
	}
	for i, hit := range hits {
		fmt.Fprintf(&b, "\n%d. %s v%d (%s) — %s%s%s%s\n   %s", i+1, hit.Slug, hit.Version, hit.Project,
			oneLineByFields(hit.Title, 80), tagListByFmt(hit.Tags), matchNote(hit.Match)+explainNoteByFmt(hit), stateNote(hit.State), oneLineByFields(hit.Snippet, 240))
	}
	return b.String()
}

// oneLineByFields, tagListByFmt and explainNoteByFmt are the helpers as
// they were written before.
func oneLineByFields(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func tagListByFmt(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return fmt.Sprintf(" [%s]", strings.Join(tags, ", "))
}

func explainNoteByFmt(hit service.Hit) string {
	if hit.Explanation == "" || hit.Match == memory.MatchMeaning {
		return ""
	}
	return " · " + oneLineByFields(hit.Explanation, 80)
}

// texts that test oneLine's edges: whitespace of every kind and position,
// lengths around the limits, multi-byte runes, invalid UTF-8.
var renderTexts = []string{
	"", " ", "a", "  a  b\t\nc  ", "\u00a0x\u2003y\u0085",
	strings.Repeat("x", 79), strings.Repeat("x", 80), strings.Repeat("x", 81),
	strings.Repeat("ä", 80), strings.Repeat("ä", 81), strings.Repeat("ab ", 27), strings.Repeat("ab ", 27) + "c",
	strings.Repeat("x", 78) + " y", strings.Repeat("x", 79) + " y", strings.Repeat("x", 79) + "  y z",
	"bad \xff byte", strings.Repeat("\xff", 100), strings.Repeat("w ", 130), strings.Repeat("wörter ", 40),
}

func TestOneLineMatchesFieldsJoin(t *testing.T) {
	for _, s := range renderTexts {
		for _, n := range []int{1, 2, 3, 80, 240} {
			if got, want := oneLine(s, n), oneLineByFields(s, n); got != want {
				t.Errorf("oneLine(%q, %d) = %q, by fields %q", s, n, got, want)
			}
		}
	}
}

func TestRecallTextMatchesFmtRendering(t *testing.T) {
	for _, hits := range [][]service.Hit{nil, renderHits(1), renderHits(len(renderTexts))} {
		for _, q := range []string{"", " q ", `say "hi"`, "ü\n"} {
			if got, want := recallText(q, hits), recallTextByFmt(q, hits); got != want {
				t.Errorf("recallText(%q, %d hits):\n%s\nwant:\n%s", q, len(hits), got, want)
			}
		}
	}
}

// renderHits are n hits with every field set differently.
func renderHits(n int) []service.Hit {
	matches := []string{memory.MatchWords, memory.MatchMeaning, memory.MatchBoth, ""}
	states := []string{"", memory.ProposalPending, "expired"}
	hits := make([]service.Hit, n)
	for i := range hits {
		hits[i] = service.Hit{
			Project: "team/notes", Slug: fmt.Sprintf("slug-%d", i), Version: i * 7,
			Title:       renderTexts[i%len(renderTexts)],
			Snippet:     renderTexts[(i+5)%len(renderTexts)] + strings.Repeat(" text", i*3),
			Tags:        []string{"a", "b c"}[:i%3%2+i%2],
			Match:       matches[i%len(matches)],
			Explanation: []string{"", "matched by a typo of \"x\""}[i%2],
			State:       states[i%len(states)],
		}
	}
	return hits
}

// BenchmarkRecallText renders ten hits with realistic titles and snippets.
func BenchmarkRecallText(b *testing.B) {
	hits := make([]service.Hit, 10)
	for i := range hits {
		hits[i] = service.Hit{Project: "team/notes", Slug: fmt.Sprintf("db-choice-%d", i), Version: 3,
			Title:   "Why we chose SQLite over Postgres for the single-node deployment",
			Snippet: strings.Repeat("The writer keeps one connection; readers use a pool. ", 5),
			Tags:    []string{"database", "decision"}, Match: memory.MatchWords}
	}
	for _, r := range []struct {
		name string
		fn   func(string, []service.Hit) string
	}{{"fmt", recallTextByFmt}, {"onepass", recallText}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.fn("sqlite writer", hits)
			}
		})
	}
}
