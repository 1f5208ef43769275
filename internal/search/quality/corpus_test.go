package quality

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// note is one entry of the corpus: testdata/notes/<slug>.md, a header of
// "title:" and "tags:" lines, a line "---", then the content.
type note struct {
	slug, title, content string
	tags                 []string
}

// text is everything of a note that is indexed.
func (n note) text() string {
	return n.slug + " " + n.title + " " + strings.Join(n.tags, " ") + " " + n.content
}

// query is one line of testdata/queries.tsv: a kind, the query text, and
// the slugs of which the benchmark expects at least one among the hits.
type query struct {
	kind, text string
	want       []string
	line       int
}

// Kinds of queries, in the order the table prints them.
const (
	kindForms      = "forms"
	kindSplit      = "compound-split"
	kindJoin       = "compound-join"
	kindTypo       = "typo"
	kindAcronym    = "acronym"
	kindParaphrase = "paraphrase"
)

var kinds = []string{kindForms, kindSplit, kindJoin, kindTypo, kindAcronym, kindParaphrase}

// Least sizes of the corpus, so that a lost file shows.
const (
	minNotes         = 40
	minQueries       = 80
	minQueriesOfKind = 12
)

func loadNotes(t testing.TB) []note {
	t.Helper()
	root := filepath.Join("testdata", "notes")
	var notes []note
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n, ok := parseNote(strings.TrimSuffix(filepath.ToSlash(rel), ".md"), string(raw))
		if !ok {
			t.Fatalf("%s: want title:, tags: and --- before the content", path)
		}
		notes = append(notes, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return notes
}

func parseNote(slug, raw string) (note, bool) {
	head, content, ok := strings.Cut(raw, "\n---\n")
	if !ok {
		return note{}, false
	}
	n := note{slug: slug, content: strings.TrimSpace(content)}
	for line := range strings.SplitSeq(head, "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "title":
			n.title = strings.TrimSpace(v)
		case "tags":
			n.tags = strings.Fields(v)
		}
	}
	return n, n.title != "" && n.content != ""
}

func loadQueries(t testing.TB) []query {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "queries.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []query
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		parts := strings.Split(s, "\t")
		if len(parts) != 3 || !slices.Contains(kinds, parts[0]) || strings.TrimSpace(parts[1]) == "" {
			t.Fatalf("queries.tsv:%d: want kind<TAB>query<TAB>slugs with a kind of %v: %q", line, kinds, s)
		}
		qs = append(qs, query{kind: parts[0], text: parts[1], want: strings.Fields(parts[2]), line: line})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}

// words are the lower-cased letter and digit runs of s: a crude tokenizer,
// only for checking that the queries mean what their kind says.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// stopWords are the English and German function words recall ignores.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range [][]byte{en.EnglishStopWords, de.GermanStopWords} {
		tm := analysis.NewTokenMap()
		if err := tm.LoadBytes(list); err != nil {
			panic(err)
		}
		for w := range tm {
			m[w] = true
		}
	}
	return m
}()

// related says whether two words are the same word up to an ending: one is
// a prefix of the other, and the shorter has at least 4 letters.
func related(a, b string) bool {
	if len([]rune(a)) > len([]rune(b)) {
		a, b = b, a
	}
	return len([]rune(a)) >= 4 && strings.HasPrefix(b, a)
}

// TestCorpus checks the benchmark's data: enough notes and queries of every
// kind, every expected slug exists, and the queries of some kinds are what
// their kind claims — a typo is a word of no note, a split compound is not a
// word of its note, and a paraphrase shares no word (up to endings) with the
// note it must find.
func TestCorpus(t *testing.T) {
	notes, qs := loadNotes(t), loadQueries(t)
	if len(notes) < minNotes || len(qs) < minQueries {
		t.Fatalf("%d notes and %d queries; want at least %d and %d", len(notes), len(qs), minNotes, minQueries)
	}
	bySlug := map[string]note{}
	all := map[string]bool{}
	for _, n := range notes {
		bySlug[n.slug] = n
		for _, w := range words(n.text()) {
			all[w] = true
		}
	}
	perKind := map[string]int{}
	for _, q := range qs {
		perKind[q.kind]++
		if len(q.want) == 0 {
			t.Errorf("queries.tsv:%d: no expected slug", q.line)
		}
		var target []string
		for _, s := range q.want {
			n, ok := bySlug[s]
			if !ok {
				t.Errorf("queries.tsv:%d: no note %s", q.line, s)
			}
			target = append(target, words(n.text())...)
		}
		qw := words(q.text)
		switch q.kind {
		case kindTypo:
			if !slices.ContainsFunc(qw, func(w string) bool { return !all[w] }) {
				t.Errorf("queries.tsv:%d: typo query %q has no word that is in no note", q.line, q.text)
			}
		case kindSplit:
			if slices.Contains(target, qw[0]) {
				t.Errorf("queries.tsv:%d: the compound %q is a word of the note itself", q.line, qw[0])
			}
		case kindParaphrase:
			for _, w := range qw {
				if stopWords[w] {
					continue
				}
				if i := slices.IndexFunc(target, func(x string) bool { return related(w, x) }); i >= 0 {
					t.Errorf("queries.tsv:%d: paraphrase %q shares %q with its note (%q)", q.line, q.text, w, target[i])
				}
			}
		}
	}
	for _, k := range kinds {
		if perKind[k] < minQueriesOfKind {
			t.Errorf("%d queries of kind %s, want at least %d", perKind[k], k, minQueriesOfKind)
		}
	}
}
