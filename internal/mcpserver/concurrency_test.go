package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

const writesPerClient = 50

// TestConcurrentRemembersOverMCP: many sessions writing the same slugs get
// versions 1..n without gaps or duplicates, one per successful call, and the
// index ends at each slug's last version (invariants 2 and 3
// (docs/architecture.md#invariant-2-one-version-per-remember-no-gaps,
// docs/architecture.md#invariant-3-read-your-writes) through MCP).
func TestConcurrentRemembersOverMCP(t *testing.T) {
	const (
		clients = 32
		writes  = writesPerClient
		slugs   = 5
	)
	h := newHarness(t, service.Options{BudgetOff: true})
	token, key := h.env.Key(t, "ws", "proj", "swarm", memory.RoleWrite)

	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, clients*writes)
	for g := range clients {
		c := h.client(t, token) // one session each
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				slug := fmt.Sprintf("shared/slug-%d", (g+i)%slugs)
				res, err := callRaw(c, "remember", map[string]any{
					"slug":    slug,
					"content": fmt.Sprintf("write %d of client %d: %s", i, g, uniqueWord(g, i)),
				})
				switch {
				case err != nil:
					errs <- fmt.Sprintf("client %d write %d: %v", g, i, err)
				case res.IsError:
					errs <- fmt.Sprintf("client %d write %d: %v", g, i, res.Content)
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	c := h.client(t, token)
	total := 0
	for s := range slugs {
		slug := fmt.Sprintf("shared/slug-%d", s)
		latest, _ := callOK[service.Entry](t, c, "get", map[string]any{"slug": slug})
		n := latest.LatestVersion
		if latest.Version != n {
			t.Fatalf("%s: get gave v%d, latest is %d", slug, latest.Version, n)
		}
		// The history tool shows at most 200 versions; the store shows all,
		// so the whole run 1..n is checked.
		page, _ := callOK[service.HistoryResult](t, c, "history", map[string]any{"slug": slug, "limit": 200})
		all, err := h.env.Store.History(context.Background(), key.First().Project, slug, clients*writes)
		if err != nil {
			t.Fatalf("store history: %v", err)
		}
		if len(all) != n || len(page.Versions) != min(n, 200) {
			t.Fatalf("%s: latest %d, store has %d versions, history tool %d", slug, n, len(all), len(page.Versions))
		}
		for i, v := range all { // newest first: n, n-1, …, 1
			if v.Version != n-i {
				t.Fatalf("%s: history position %d is version %d, want %d (gap or duplicate)", slug, i, v.Version, n-i)
			}
			if i < len(page.Versions) && page.Versions[i].Version != v.Version {
				t.Fatalf("%s: history tool position %d is v%d, store says v%d", slug, i, page.Versions[i].Version, v.Version)
			}
		}
		total += n

		word := latest.Content[strings.LastIndex(latest.Content, " ")+1:]
		rec, _ := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": word})
		if len(rec.Hits) != 1 || rec.Hits[0].Slug != slug || rec.Hits[0].Version != n {
			t.Fatalf("%s: recall of its last word %q gave %+v", slug, word, rec.Hits)
		}
		// The version before must be gone from the index.
		prev, _ := callOK[service.Entry](t, c, "get", map[string]any{"slug": slug, "version": n - 1})
		oldWord := prev.Content[strings.LastIndex(prev.Content, " ")+1:]
		// (A word no entry uses any more may be taken for a typo of a
		// neighbouring unique word: such hits hold that word, not this one.)
		rec, _ = callOK[service.RecallResult](t, c, "recall", map[string]any{"query": oldWord})
		for _, h := range rec.Hits {
			if (h.Slug == slug && h.Version != n) || strings.Contains(h.Title+" "+h.Snippet, oldWord) {
				t.Fatalf("%s: replaced word %q still found: %+v", slug, oldWord, rec.Hits)
			}
		}
	}
	if int64(total) != ok.Load() || total != clients*writes {
		t.Fatalf("versions over all slugs: %d; successful calls: %d; calls: %d", total, ok.Load(), clients*writes)
	}
}

// uniqueWord is a token no other write uses. It has no vowels and none of
// s, d, l, y, so neither the English nor the German stemmer shortens it and
// two words never share a stem.
func uniqueWord(g, i int) string {
	const letters = "bcfghjkmnpqrtvwx"
	n := g*writesPerClient + i
	var b strings.Builder
	b.WriteString("zq")
	for range 4 {
		b.WriteByte(letters[n%len(letters)])
		n /= len(letters)
	}
	return b.String()
}
