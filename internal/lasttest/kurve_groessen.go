//go:build last

// The curve's sizes (part groessen): one project of each size of
// -last.kurve.groessen, written as the cold start writes it (kaltdaten.go:
// Zipf-distributed words, a unique word per entry), imported and indexed
// by munin import and munin reindex, then served; one client recalls the
// 200 most frequent words (the first is in nearly every entry) and the
// unique words of entries spread over the project (each must find its
// entry), each series for -last.kurve.dauer.

package lasttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// serie is one series of recalls: sorted latencies and the server's CPU
// per recall.
type serie struct {
	lat []time.Duration
	cpu time.Duration
}

// Bounds of a series: at least serieMin recalls, then until the point's
// time is up, at most serieMax.
const (
	serieMin = 20
	serieMax = 20000
)

// kurveSerie recalls query(k) for k = 0, 1, … one after the other. Each
// answer must hold the slug query names, or any hit if it names none.
func kurveSerie(t testing.TB, p *serveProc, a *agent, d time.Duration, query func(k int) (word, slug string)) serie {
	cpu0, start := p.cpu(), time.Now()
	var s serie
	for k := 0; k < serieMax && (k < serieMin || time.Since(start) < d); k++ {
		word, slug := query(k)
		begin := time.Now()
		sc, err := a.call(context.Background(), "recall", map[string]any{"query": word})
		s.lat = append(s.lat, time.Since(begin))
		if err != nil {
			t.Fatalf("recall %q: %v", word, err)
		}
		var res struct {
			Hits []kaltHit `json:"hits"`
		}
		decode(t, sc, &res)
		found := len(res.Hits) > 0
		if slug != "" {
			found = slices.ContainsFunc(res.Hits, func(h kaltHit) bool { return h.Slug == slug })
		}
		if !found {
			t.Fatalf("recall %q findet %v, erwartet %s", word, res.Hits, cmp(slug, "Treffer"))
		}
	}
	s.cpu = (p.cpu() - cpu0) / time.Duration(len(s.lat))
	slices.Sort(s.lat)
	return s
}

func cmp(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

func (s serie) cells() string {
	return fmt.Sprintf("%s\t%s\t%s\t", ms(pct(s.lat, 50)), ms(pct(s.lat, 99)), ms(s.cpu))
}

// groesse is one row of the sizes table.
type groesse struct {
	n                   int
	imp, ri             ranCmd
	riErr               error
	frequent, rare      serie
	rss, peak, indexDir uint64
}

// kurveGroessen is part groessen.
func kurveGroessen(t *testing.T, bin string, p kurvenProfil) {
	fmt.Printf("\n=== groessen: ein Projekt, ein Client, je Reihe %s (mindestens %d recalls): häufig = die 200 häufigsten Wörter der Reihe nach, selten = das eigene Wort je eines Eintrags, über das Projekt verteilt\n", p.dauer, serieMin)
	var rows []groesse
	for _, n := range p.groessen {
		rows = append(rows, messeGroesse(t, bin, n, p.dauer))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Einträge\timport\treindex\treindex Spitze\thäufig p50\tp99\tCPU je recall\tselten p50\tp99\tCPU je recall\tServer RSS\tSpitze\tIndex je Eintrag\t")
	for _, g := range rows {
		ri := sec(g.ri.wall)
		if g.riErr != nil {
			ri = "gescheitert"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f MiB\t%s%s%.0f MiB\t%.0f MiB\t%.0f B\t\n", g.n, sec(g.imp.wall), ri, mib(g.ri.maxRSS),
			g.frequent.cells(), g.rare.cells(), mib(g.rss), mib(g.peak), float64(g.indexDir)/float64(g.n))
	}
	tw.Flush()
	for _, g := range rows {
		if g.riErr != nil {
			fmt.Printf("reindex bei %d Einträgen gescheitert (der erste recall baute den Index): %v\n", g.n, g.riErr)
		}
	}
}

// messeGroesse imports, indexes, serves and recalls a project of n entries.
func messeGroesse(t testing.TB, bin string, n int, d time.Duration) groesse {
	ref := kaltWorkspace + "/" + kaltProject
	work, data := t.TempDir(), t.TempDir()
	first, _, _ := kaltData(t, work, n)
	g := groesse{n: n}
	g.imp = runMunin(t, bin, "import", "--data", data, ref, first)
	os.Remove(first)
	g.ri, g.riErr = tryMunin(bin, "reindex", "--data", data, ref)
	key := runMunin(t, bin, "key", "create", "--data", data, "--workspace", kaltWorkspace, "--project", kaltProject,
		"--agent", "kurve", "--role", "read")
	token := lastLine(key.stdout)

	srv := kurveServe(t, bin, data)
	a := kaltConnect(t, srv, token)
	kaltFirstRecall(t, srv, a, kaltWord(0, 1), kaltSlug(0), 1)
	g.frequent = kurveSerie(t, srv, a, d, func(k int) (string, string) { return vocabWord(k % kaltRecalls), "" })
	// A prime stride visits entries all over the project in an order
	// unrelated to their age.
	g.rare = kurveSerie(t, srv, a, d, func(k int) (string, string) {
		i := (k * 7919) % n
		return kaltWord(i, 1), kaltSlug(i)
	})
	g.rss, g.peak = srv.memory()
	a.c.Close()
	srv.stop()
	g.indexDir, _ = diskUse(filepath.Join(data, "index"))
	return g
}

// lastLine is the last non-empty line of s (munin key create's key).
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSpace(s[strings.LastIndex(s, "\n")+1:])
}
