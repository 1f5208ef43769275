package search

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"munin/internal/memory"
	"munin/internal/search/text"
)

func TestWordVariants(t *testing.T) {
	cases := []struct {
		name, content, query string
	}{
		{"de plural finds singular", "Wir nutzen eine Datenbank für alles.", "Datenbanken"},
		{"de singular finds plural", "Mehrere Datenbanken laufen parallel.", "Datenbank"},
		{"de -ung plural", "Alle Entscheidungen stehen im Wiki.", "Entscheidung"},
		{"de umlaut plural", "Die Häuser sind alt.", "Haus"},
		{"de genitive", "Die Konfiguration des Servers ist fertig.", "Server"},
		{"en -ing", "We are indexing every entry.", "index"},
		{"en plural", "All decisions are recorded.", "decision"},
		{"en -ed", "The cache was invalidated yesterday.", "invalidate"},
		{"case", "POSTGRES replication", "postgres"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newFakeSource()
			src.Put(projA, "target", "Note", c.content)
			src.Put(projA, "other", "Other", "nothing related here at all")
			r := newTestRegistry(t, src, Options{})
			if got := slugs(find(t, r, projA, c.query)); len(got) != 1 || got[0] != "target" {
				t.Fatalf("%q in %q: hits %v, want [target]", c.query, c.content, got)
			}
		})
	}
}

// TestFunctionWordsOfBothLanguagesFindNothing: every text is indexed in
// both languages, so each language's stop words are dropped in both; a
// question matches on its content words only.
func TestFunctionWordsOfBothLanguagesFindNothing(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "en", "The plan", "This is the plan for the rollout.")
	src.Put(projA, "de", "Der Plan", "Das ist der Plan für die Einführung.")
	src.Put(projA, "kafka", "Kafka retention", "Retention is seven days.")
	src.Put(projA, "tools", "Tools", "The binaries live in bin; see the man page.")
	r := newTestRegistry(t, src, Options{})
	for _, q := range []string{"the", "is the", "der die das", "und ist nicht"} {
		if got := slugs(find(t, r, projA, q)); len(got) != 0 {
			t.Errorf("stop-word query %q found %v, want nothing", q, got)
		}
	}
	if got := slugs(find(t, r, projA, "what is the retention of kafka")); len(got) != 1 || got[0] != "kafka" {
		t.Errorf("question found %v, want [kafka]", got)
	}
	// German stop words that are English words stay searchable in English.
	for _, q := range []string{"bin", "man"} {
		if got := slugs(find(t, r, projA, q)); len(got) != 1 || got[0] != "tools" {
			t.Errorf("%q found %v, want [tools]", q, got)
		}
	}
}

// TestAcronymsAreNoStopWords: words in capitals that spell a stop word of
// either language (MIT, IT, ES, DES, WAR) stay searchable.
func TestAcronymsAreNoStopWords(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "lic", "Licensing", "The library is MIT licensed.")
	src.Put(projA, "region", "Region", "Everything runs in two regions; IT owns the accounts.")
	src.Put(projA, "crypto", "Cipher", "Legacy systems still use DES and ES modules; deploy the WAR file.")
	src.Put(projA, "plain", "Plain", "Das ist der Plan, und es geht mit dem Zug.")
	r := newTestRegistry(t, src, Options{})
	for q, want := range map[string]string{"MIT": "lic", "IT": "region", "DES": "crypto", "ES": "crypto", "WAR": "crypto"} {
		if got := slugs(find(t, r, projA, q)); len(got) != 1 || got[0] != want {
			t.Errorf("%q found %v, want [%s]", q, got, want)
		}
	}
}

func TestTitleAndTagsOutweighContent(t *testing.T) {
	src := newFakeSource()
	filler := strings.Repeat("some other words about systems ", 5)
	src.Put(projA, "in-content", "Queue setup", "We run kafka in production. "+filler)
	src.Put(projA, "in-title", "Kafka setup", "We run it in production. "+filler)
	src.Put(projA, "in-tag", "Queue notes", "We run it in production. "+filler, "kafka")
	r := newTestRegistry(t, src, Options{})
	got := slugs(find(t, r, projA, "kafka"))
	if len(got) != 3 || got[2] != "in-content" {
		t.Fatalf("order %v, want the content-only hit last", got)
	}
	if got[0] != "in-title" {
		t.Fatalf("order %v, want the title hit first", got)
	}
}

// TestTagOutweighsContentAmongSeveralTags: a word that is one of several
// tags still weighs more than the same word once in the content.
func TestTagOutweighsContentAmongSeveralTags(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "in-tag", "Broker notes", "We run the message brokers on three nodes in production, restarted weekly by the ops team.", "kafka", "infra", "ops", "prod", "team:core")
	src.Put(projA, "in-content", "Broker notes", "We run kafka on three nodes in production, restarted weekly by the ops team.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "kafka")); len(got) != 2 || got[0] != "in-tag" {
		t.Fatalf("order %v, want the tag hit first", got)
	}
}

func TestTagFilter(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "both", "Both", "shared text", "db", "team:infra")
	src.Put(projA, "db-only", "DB", "shared text", "db")
	src.Put(projA, "infra-only", "Infra", "shared text", "team:infra")
	src.Put(projA, "none", "None", "shared text")
	r := newTestRegistry(t, src, Options{})
	for _, c := range []struct {
		tags []string
		want string
	}{
		{nil, "[both db-only infra-only none]"},
		{[]string{"db"}, "[both db-only]"},
		{[]string{"db", "team:infra"}, "[both]"},
		{[]string{"DB"}, "[]"}, // tags are case-sensitive
		{[]string{"missing"}, "[]"},
	} {
		got := slugs(find(t, r, projA, "shared", c.tags...))
		sortStrings(got)
		if fmt.Sprint(got) != c.want {
			t.Errorf("tags %v: %v, want %s", c.tags, got, c.want)
		}
	}
	hits := find(t, r, projA, "shared", "db", "team:infra")
	if fmt.Sprint(hits[0].Tags) != "[db team:infra]" {
		t.Errorf("hit tags %v", hits[0].Tags)
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestLimitBounds(t *testing.T) {
	src := newFakeSource()
	for i := range 70 {
		src.Put(projA, fmt.Sprintf("e%02d", i), "Entry", "common word")
	}
	r := newTestRegistry(t, src, Options{})
	for _, c := range []struct{ limit, want int }{
		{0, DefaultLimit}, {-3, DefaultLimit}, {1, 1}, {5, 5}, {50, 50}, {51, MaxLimit}, {1000, MaxLimit},
	} {
		hits, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: "common", Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != c.want {
			t.Errorf("limit %d: %d hits, want %d", c.limit, len(hits), c.want)
		}
	}
}

func TestHitFields(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "decisions/db-choice", "DB choice", "first")
	v := src.Put(projA, "decisions/db-choice", "Database choice", "We chose SQLite.", "db", "adr")
	r := newTestRegistry(t, src, Options{})
	hits := find(t, r, projA, "sqlite")
	if len(hits) != 1 {
		t.Fatalf("hits %v", hits)
	}
	h := hits[0]
	if h.Slug != v.Slug || h.Title != v.Title || h.Version != 2 || !h.UpdatedAt.Equal(v.CreatedAt) ||
		fmt.Sprint(h.Tags) != "[db adr]" || h.Score <= 0 || h.Snippet != "We chose «SQLite»." {
		t.Fatalf("hit %+v, want fields of %+v", h, v)
	}
	// The slug's words are searchable too.
	if got := slugs(find(t, r, projA, "choice")); len(got) != 1 {
		t.Fatalf("slug word: %v", got)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 20)
	src := newFakeSource()
	src.Put(projA, "middle", "Middle", long+"Die Datenbanken laufen auf SQLite\n\nmit   WAL. "+long)
	src.Put(projA, "title-only", "Zebra", long)
	src.Put(projA, "short", "Short", "tiny zebra note")
	r := newTestRegistry(t, src, Options{})

	s := find(t, r, projA, "datenbank sqlite")[0].Snippet
	if !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") ||
		!strings.Contains(s, "«Datenbanken» laufen auf «SQLite» mit WAL.") {
		t.Errorf("snippet %q", s)
	}
	if n := utf8.RuneCountInString(s); n > 200 {
		t.Errorf("snippet has %d runes", n)
	}

	hits := find(t, r, projA, "zebra")
	bySlug := map[string]string{}
	for _, h := range hits {
		bySlug[h.Slug] = h.Snippet
	}
	if got := bySlug["short"]; got != "tiny «zebra» note" {
		t.Errorf("short snippet %q", got)
	}
	ts := bySlug["title-only"]
	if !strings.HasPrefix(ts, "Lorem ipsum") || !strings.HasSuffix(ts, " …") || utf8.RuneCountInString(ts) > 165 {
		t.Errorf("fallback snippet %q", ts)
	}
}

// TestLongMatchedWord: a matched word longer than the snippet window (a
// dotted class path is one token) once sliced out of range and panicked.
func TestLongMatchedWord(t *testing.T) {
	word := "org.example." + strings.Repeat("persistence_repository.", 8) + "find_all"
	src := newFakeSource()
	src.Put(projA, "trace", "Stack trace", "The nightly import crashed again; the trace pointed at "+word+" when the list was empty.")
	r := newTestRegistry(t, src, Options{})
	hits := find(t, r, projA, word)
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "org.example") {
		t.Fatalf("recall of a %d-rune word: %+v", len(word), hits)
	}
	long, longUmlauts := strings.Repeat("a", 200)+" tail", "lead "+strings.Repeat("ä", 300)
	for content, match := range map[string]text.Span{long: {Start: 0, End: 200}, longUmlauts: {Start: 5, End: len(longUmlauts)}} {
		if s := text.Snippet(content, []text.Span{match}); !utf8.ValidString(s) || s == "" {
			t.Errorf("snippet around a long match: %q", s)
		}
	}
}

func TestHostileQueries(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Title x", "content with words and x")
	r := newTestRegistry(t, src, Options{})
	for _, q := range []string{
		`"`, `""`, `+-`, `title:x`, `*`, `~`, `x~2`, `(`, `)`, `\`, `AND OR NOT`, `a:b:c`,
		`[1 TO 5]`, `{`, `/.*/`, `^`, `content:*`, `+title:"x" -content:y`, `🦀`, `'; DROP TABLE entries; --`,
	} {
		hits, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: q})
		if err != nil {
			t.Errorf("query %q: %v", q, err)
		}
		_ = hits
	}
	for _, c := range []struct {
		text string
		tags []string
		code memory.Code
	}{
		{"", nil, memory.CodeInvalid},
		{" \t\n ", nil, memory.CodeInvalid},
		{"bad\xffutf8", nil, memory.CodeInvalid},
		{"nul\x00byte", nil, memory.CodeInvalid},
		{strings.Repeat("a", memory.MaxQuery+1), nil, memory.CodeTooLarge},
		{"words", []string{"bad tag"}, memory.CodeInvalid},
	} {
		_, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: c.text, Tags: c.tags})
		if memory.ErrorCode(err) != c.code {
			t.Errorf("query %q tags %v: %v, want %s", c.text, c.tags, err, c.code)
		}
	}
	// Query syntax is just words: "title: x" finds the entry by its words.
	if got := find(t, r, projA, "title: x"); len(got) != 1 {
		t.Errorf("title: x hits %v", got)
	}
}

// TestSlugAndTagsShareOneField: a word of the slug or of a tag is found and
// outweighs the content, while each query term costs three term searches
// (title, tags and slug, content), not one per field of the entry.
func TestSlugAndTagsShareOneField(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "decisions/zeppelin-choice", "Airships", "We picked one.")
	src.Put(projA, "notes/b", "Airships", "Which zeppelin we picked.", "hangar")
	src.Put(projA, "notes/c", "Airships", "The hangar is big.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "choice")); len(got) != 1 || got[0] != "decisions/zeppelin-choice" {
		t.Errorf("choice: %v, want the slug's entry", got)
	}
	if got := slugs(find(t, r, projA, "zeppelin")); len(got) != 2 || got[0] != "decisions/zeppelin-choice" {
		t.Errorf("zeppelin: %v, want the slug's entry before the content's", got)
	}
	if got := slugs(find(t, r, projA, "hangar")); len(got) != 2 || got[0] != "notes/b" {
		t.Errorf("hangar: %v, want the tag's entry first", got)
	}
	// One query term making three term searches: rank's test of this name.
}

// The same through a recall: the hit's snippet shows the earlier of two
// equal windows, with the spans the index reports (both analyzers' fields).
func TestRecallSnippetTieBreak(t *testing.T) {
	src := newFakeSource()
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 12)
	src.Put(projA, "log", "Nightly", "north: import failed. "+filler+"south: import failed.")
	r := newTestRegistry(t, src, Options{})
	hits := find(t, r, projA, "import failed")
	if len(hits) != 1 {
		t.Fatalf("hits %v, want one", describe(hits))
	}
	if got := hits[0].Snippet; !strings.Contains(got, "north: «import» «failed»") || strings.Contains(got, "south") {
		t.Fatalf("snippet %q, want the north window", got)
	}
}
