package text

import (
	"fmt"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestCheckQuery: what a client is told for a query that cannot be searched
// (the service and the registry both answer with these).
func TestCheckQuery(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		code      memory.Code
		msg       string
	}{
		{"  kafka retention \n", "kafka retention", "", ""},
		{"", "", memory.CodeInvalid, "query must not be empty"},
		{" \t\n ", "", memory.CodeInvalid, "query must not be empty"},
		{"bad\xffutf8", "", memory.CodeInvalid, "query"},
		{"nul\x00byte", "", memory.CodeInvalid, "query"},
		{strings.Repeat("a", memory.MaxQuery+1), "", memory.CodeTooLarge, "query"},
	} {
		got, err := CheckQuery(c.raw)
		if memory.ErrorCode(err) != c.code || got != c.want || (err != nil && !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("CheckQuery(%.20q) = %q, %v; want %q, code %q naming %q", c.raw, got, err, c.want, c.code, c.msg)
		}
	}
}

// TestCheckTerms: MaxQueryTerms distinct words pass, one more is refused
// with the message clients see; repeats and function words do not count.
func TestCheckTerms(t *testing.T) {
	words := func(n int) string {
		var ws []string
		for i := range n {
			ws = append(ws, fmt.Sprintf("w%cx%c", 'b'+i/20, 'b'+i%20))
		}
		return strings.Join(ws, " ")
	}
	if err := CheckTerms(Analyze(words(memory.MaxQueryTerms) + " the der " + words(memory.MaxQueryTerms))); err != nil {
		t.Fatalf("%d words: %v", memory.MaxQueryTerms, err)
	}
	err := CheckTerms(Analyze(words(memory.MaxQueryTerms + 1)))
	if want := "invalid: query has 33 distinct search terms; at most 32 are allowed"; err == nil || err.Error() != want {
		t.Fatalf("%d words: %v, want %q", memory.MaxQueryTerms+1, err, want)
	}
}

// TestAnalyzeWords: a word's English and German stems stand at one
// position and count as one word; Seq keeps the words in order, as written
// in lower case.
func TestAnalyzeWords(t *testing.T) {
	terms := Analyze("Datenbanken der Replication datenbanken")
	if terms.Count() != 2 || len(terms.Seq) != 2 || terms.Seq[0].Lower != "datenbanken" || terms.Seq[1].Lower != "replication" {
		t.Fatalf("terms %+v, want two words: datenbanken, replication", terms)
	}
	if got := terms.ByAnalyzer[AnalyzerEN]; len(got) < 3 {
		t.Fatalf("terms %v, want both stems of datenbanken and replication's", got)
	}
}
