//go:build last

// The check after the load: over MCP, with a read key per project, as an
// agent that joins later would see the stock.

package lasttest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
)

// checkStock is the proof: versions of all contested entries add up to the
// successful remember calls, and the last version's unique word finds its
// entry through recall.
func checkStock(t testing.TB, srv *server, projects []memory.ProjectRef, written int) {
	ctx := context.Background()
	total, checked := 0, 0
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	for pi, ref := range projects {
		// A session of its own with the project's read key, as an agent
		// that joins after the load would see it.
		reader, _, err := connect(ctx, hc, srv.url, srv.checkers[pi], -1-pi)
		if err != nil {
			t.Fatalf("%s: verbinden zur Prüfung: %v", ref, err)
		}
		defer reader.c.Close()
		for s := range *lastSlugs {
			slug := contestedSlug(s)
			sc, err := reader.call(ctx, "get", map[string]any{"slug": slug})
			if err != nil {
				if strings.Contains(err.Error(), "not_found") {
					continue // never written
				}
				t.Fatalf("%s %s: %v", ref, slug, err)
			}
			var latest struct {
				LatestVersion int    `json:"latest_version"`
				Content       string `json:"content"`
			}
			decode(t, sc, &latest)
			total += latest.LatestVersion
			word, _, _ := strings.Cut(latest.Content, ":")
			hits, err := reader.call(ctx, "recall", map[string]any{"query": word, "limit": 50})
			if err != nil {
				t.Fatalf("%s recall %s: %v", ref, word, err)
			}
			var found struct {
				Hits []struct {
					Slug string `json:"slug"`
				} `json:"hits"`
			}
			decode(t, hits, &found)
			if !slices.ContainsFunc(found.Hits, func(h struct {
				Slug string `json:"slug"`
			}) bool {
				return h.Slug == slug
			}) {
				t.Errorf("%s: das Wort %q der letzten Fassung v%d findet %s nicht (Treffer %v)", ref, word, latest.LatestVersion, slug, found.Hits)
			}
			checked++
		}
	}
	if total != written {
		t.Errorf("Summe der Fassungen %d ≠ erfolgreiche remember-Aufrufe %d", total, written)
		return
	}
	if !t.Failed() {
		fmt.Printf("Bestand geprüft: %d Fassungen, Suchindex aktuell (%d umkämpfte Einträge)\n", total, checked)
	}
}

// decode turns a tool's structured content into out.
func decode(t testing.TB, v, out any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}
