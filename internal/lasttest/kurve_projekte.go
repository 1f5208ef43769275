//go:build last

// The curve's many small projects (part projekte): -last.kurve.projekte
// projects of 100 entries, once all in one workspace and once spread over
// -last.kurve.bereiche workspaces. The server's resident memory idle, then
// after each project was recalled once (over REST, which leaves no session
// behind: a recall finds an entry by its unique word), and the
// index on disk per entry.

package lasttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"munin/internal/memory"
	"munin/internal/portable"
)

// kleinEintraege is the size of a small project.
const kleinEintraege = 100

// kleineZeile is one row of the table.
type kleineZeile struct {
	projekte, bereiche int
	idle, rss, peak    uint64
	index              uint64
	first              []time.Duration // each project's first recall, sorted
	cpu                time.Duration   // the server's, per project
}

// kurveProjekte is part projekte.
func kurveProjekte(t *testing.T, bin string, p kurvenProfil) {
	sameSchemas(t, bin)
	fmt.Printf("\n=== projekte: %d Projekte zu je %d Einträgen, in einem und in %d Arbeitsbereichen; jedes Projekt einmal recall über REST (ohne Sitzung)\n",
		p.projekte, kleinEintraege, p.bereiche)
	var rows []kleineZeile
	for _, b := range slices.Compact([]int{1, p.bereiche}) {
		rows = append(rows, kleineProjekte(t, bin, p.projekte, b))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Projekte\tArbeitsbereiche\tRSS leer\tRSS danach\tSpitze\tje Projekt\terstes recall p50\tp99\tServer-CPU je Projekt\tIndex je Eintrag\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%.0f MiB\t%.0f MiB\t%.0f MiB\t%.2f MiB\t%s\t%s\t%s\t%.0f B\t\n", r.projekte, r.bereiche, mib(r.idle), mib(r.rss), mib(r.peak),
			(mib(r.rss)-mib(r.idle))/float64(r.projekte), ms(pct(r.first, 50)), ms(pct(r.first, 99)), ms(r.cpu),
			float64(r.index)/float64(r.projekte*kleinEintraege))
	}
	tw.Flush()
}

// kleineProjekte seeds n projects over b workspaces, serves them and
// recalls each once.
func kleineProjekte(t testing.TB, bin string, n, b int) kleineZeile {
	data := t.TempDir()
	projects := make([]*saatProjekt, n)
	for k := range projects {
		ref := memory.ProjectRef{Workspace: fmt.Sprintf("klein-%03d", k%b), Project: fmt.Sprintf("p%04d", k)}
		projects[k] = &saatProjekt{ref: ref, agents: []string{"kurve"}, lines: kleinLines(k)}
	}
	saen(t, data, projects)

	srv := kurveServe(t, bin, data)
	// Let the started server settle before the idle reading.
	time.Sleep(500 * time.Millisecond)
	row := kleineZeile{projekte: n, bereiche: b}
	row.idle, _ = srv.memory()
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	cpu0 := srv.cpu()
	for k, proj := range projects {
		i := (k * 37) % kleinEintraege
		start := time.Now()
		hits := restRecall(t, hc, srv, proj.tokens[0], kaltWord(i, 1))
		row.first = append(row.first, time.Since(start))
		if !slices.Contains(hits, kaltHit{kaltSlug(i), 1}) {
			t.Fatalf("%s: recall %q findet %v, erwartet %s v1", proj.ref, kaltWord(i, 1), hits, kaltSlug(i))
		}
	}
	row.cpu = (srv.cpu() - cpu0) / time.Duration(n)
	slices.Sort(row.first)
	row.rss, row.peak = srv.memory()
	srv.stop()
	row.index, _ = diskUse(filepath.Join(data, "index"))
	return row
}

// kleinLines are project k's entries, written as the cold start's.
func kleinLines(k int) func(emit func(portable.Line)) {
	return func(emit func(portable.Line)) {
		rng := rand.New(rand.NewPCG(uint64(k), 3))
		z := rand.NewZipf(rng, 1.07, 2, kaltVocab-1)
		base := time.Now().UTC().Add(-kleinEintraege * time.Second)
		for i := range kleinEintraege {
			title, content := kaltText(rng, z, i, 1)
			emit(portable.Line{Slug: kaltSlug(i), Version: 1, Title: title, Content: content, Tags: []string{terms[i%len(terms)]},
				Agent: "kurve", CreatedAt: base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)})
		}
	}
}

// restRecall is one recall over REST: no session stays behind on the
// server to count in its memory (mcp-go's client ends its session with a
// DELETE that lacks the key, which the server refuses, so an MCP session
// would live on until its idle time is up).
func restRecall(t testing.TB, hc *http.Client, srv *serveProc, token, word string) []kaltHit {
	body, _ := json.Marshal(map[string]any{"query": word})
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(srv.url, "/mcp")+"/api/v1/recall", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("recall %q: %v\n%s", word, err, srv.logTail())
	}
	defer resp.Body.Close()
	var res struct {
		Hits []kaltHit `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("recall %q: HTTP %d, %v", word, resp.StatusCode, err)
	}
	return res.Hits
}
