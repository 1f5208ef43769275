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
)

// checkStock is the proof, per project: versions of all contested entries
// add up to the successful remember calls there, and the last version's
// unique word finds its entry through recall. In setup 4 the check is one
// session holding every project's read key, as the agents did: get names
// the project, recall does not and must return the hit with its project.
func checkStock(t testing.TB, srv *server, a aufbau, written map[string]int) {
	ctx := context.Background()
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	var all *agent
	if a.multi {
		var err error
		all, _, err = connect(ctx, hc, srv.url, strings.Join(srv.checkers, ","), -1)
		if err != nil {
			t.Fatalf("verbinden zur Prüfung mit %d Leseschlüsseln: %v", len(srv.checkers), err)
		}
		defer all.c.Close()
	}
	sumAll, checked := 0, 0
	for pi, ref := range a.projects {
		// A session of its own with the project's read key, as an agent
		// that joins after the load would see it.
		reader, project := all, ref.String()
		if reader == nil {
			var err error
			if reader, _, err = connect(ctx, hc, srv.url, srv.checkers[pi], -1-pi); err != nil {
				t.Fatalf("%s: verbinden zur Prüfung: %v", ref, err)
			}
			defer reader.c.Close()
		}
		total := 0
		for s := range *lastSlugs {
			slug := contestedSlug(s)
			args := map[string]any{"slug": slug}
			if a.multi {
				args["project"] = project
			}
			sc, err := reader.call(ctx, "get", args)
			if err != nil {
				if strings.Contains(err.Error(), "not_found") {
					continue // never written
				}
				t.Fatalf("%s %s: %v", ref, slug, err)
			}
			var latest struct {
				Project       string `json:"project"`
				LatestVersion int    `json:"latest_version"`
				Content       string `json:"content"`
			}
			decode(t, sc, &latest)
			if latest.Project != project {
				t.Errorf("%s %s: get antwortet mit Projekt %q", ref, slug, latest.Project)
			}
			total += latest.LatestVersion
			word, _, _ := strings.Cut(latest.Content, ":")
			hits, err := reader.call(ctx, "recall", map[string]any{"query": word, "limit": 50})
			if err != nil {
				t.Fatalf("%s recall %s: %v", ref, word, err)
			}
			var found struct {
				Hits []hit `json:"hits"`
			}
			decode(t, hits, &found)
			if !slices.Contains(found.Hits, hit{Project: project, Slug: slug}) {
				t.Errorf("%s: das Wort %q der letzten Fassung v%d findet %s nicht (Treffer %v)", ref, word, latest.LatestVersion, slug, found.Hits)
			}
			checked++
		}
		if total != written[project] {
			t.Errorf("%s: Summe der Fassungen %d ≠ erfolgreiche remember-Aufrufe %d", ref, total, written[project])
		}
		sumAll += total
	}
	if !t.Failed() {
		where := "einem Projekt"
		if len(a.projects) > 1 {
			where = fmt.Sprintf("%d Projekten", len(a.projects))
		}
		fmt.Printf("Bestand geprüft: %d Fassungen in %s, je Projekt so viele wie erfolgreiche remember, Suchindex aktuell (%d umkämpfte Einträge)\n", sumAll, where, checked)
	}
}

// hit is what the check reads of a recall hit.
type hit struct {
	Project string `json:"project"`
	Slug    string `json:"slug"`
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
