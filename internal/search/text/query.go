package text

import (
	"strings"

	"munin/internal/memory"
)

// Query checks. A recall's text is checked in one place, here: the service
// calls CheckQuery before it spends anything on a recall (a flood of
// over-long queries turns into cheap refusals), and the search registry
// calls it again for its own callers; CheckTerms needs the analysis, so the
// registry calls it where it analyzes the query, once.

// CheckQuery trims raw and refuses text that is empty after trimming or
// breaks the text limits of a query (memory.MaxQuery, valid UTF-8, no NUL):
// the checks that need no analysis. It returns the trimmed text.
func CheckQuery(raw string) (string, error) {
	text := strings.TrimSpace(raw)
	if text == "" {
		return "", memory.Errorf(memory.CodeInvalid, "query must not be empty")
	}
	if err := memory.ValidateText("query", text, memory.MaxQuery); err != nil {
		return "", err
	}
	return text, nil
}

// CheckTerms refuses a query of more than memory.MaxQueryTerms distinct
// words: they bound the search's cost (each is a term search over every
// text field), and only the analysis knows them.
func CheckTerms(t Terms) error {
	if n := t.Count(); n > memory.MaxQueryTerms {
		return memory.Errorf(memory.CodeInvalid, "query has %d distinct search terms; at most %d are allowed", n, memory.MaxQueryTerms)
	}
	return nil
}
