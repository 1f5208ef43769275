//go:build last

// The cold start (-last.kaltstart=N): what a restart costs a project of N
// entries, with the built munin as its own process on a data directory of
// its own. Import N entries, a full index build (munin reindex), the first
// recall after starting the server and the resident memory then, recall
// p50/p99 at N with one client, and after 1,000 changes made while the
// server was down the first recall again (the catch-up), which must see
// the changes. It fails only if a step fails or recall shows a wrong state;
// the times are printed, not judged.

package lasttest

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// kaltRef is the one project of the cold start.
const (
	kaltWorkspace = "kalt"
	kaltProject   = "start"
)

// kaltRecalls is how many recalls of distinct words make p50 and p99.
const kaltRecalls = 200

// builtIn is the build time in munin reindex's line per project.
var builtIn = regexp.MustCompile(`built in ([0-9.]+[µnm]?s)`)

// kaltHit is what the cold start reads of a recall hit.
type kaltHit struct {
	Slug    string `json:"slug"`
	Version int    `json:"version"`
}

// kaltstart runs the whole measurement and prints its report.
func kaltstart(t *testing.T, n int) {
	if n < 1000 {
		t.Fatalf("last.kaltstart %d: mindestens 1000 Einträge (die Änderungen ersetzen und vergessen 600 von ihnen)", n)
	}
	ref := kaltWorkspace + "/" + kaltProject
	bin := buildMunin(t)
	work, data := t.TempDir(), t.TempDir()
	first, changes, size := kaltData(t, work, n)

	imp := runMunin(t, bin, "import", "--data", data, ref, first)
	// Today's reindex gives up on a build longer than the index wait (10 s)
	// with unavailable; then the first start's first recall, which builds
	// the same index in memory, is the full build.
	ri, riErr := tryMunin(bin, "reindex", "--data", data, ref)
	built := ri.wall
	if m := builtIn.FindStringSubmatch(ri.stdout); m != nil {
		built, _ = time.ParseDuration(m[1])
	}
	key := runMunin(t, bin, "key", "create", "--data", data, "--workspace", kaltWorkspace, "--project", kaltProject,
		"--agent", "kaltstart", "--role", "write")
	token := strings.TrimSpace(key.stdout[strings.LastIndex(strings.TrimSpace(key.stdout), "\n")+1:])

	// Start 1: the index was built by reindex (or, while it lives in memory
	// only, is built by the first recall).
	srv := startServe(t, bin, data)
	a := kaltConnect(t, srv, token)
	firstReq, firstTotal := kaltFirstRecall(t, srv, a, kaltWord(0, 1), kaltSlug(0), 1)
	rss1, peak1 := srv.memory()
	up1, cpu1 := srv.up, srv.cpu()
	// The second recall, of the most frequent word, reads much of the index.
	frequent := time.Now()
	kaltRecall(t, a, vocabWord(0))
	second := time.Since(frequent)
	buildNote := fmt.Sprintf("%s laut reindex, Prozess %s, CPU %s, Spitze %.0f MiB RSS", sec(built), sec(ri.wall), sec(ri.cpu), mib(ri.maxRSS))
	if riErr != nil {
		built = firstReq
		buildNote = fmt.Sprintf("%s als erstes recall nach dem Start gemessen (Server-CPU bis dahin %s); reindex scheiterte nach %s (%v)", sec(built), sec(cpu1), sec(ri.wall), riErr)
	}

	// Two sets of distinct words: the most frequent ones, each in many
	// entries (the recall collects and scores them all), and words spread
	// over the whole vocabulary, most of them in a handful of entries.
	var frequentWords, spreadWords []string
	for i := range kaltRecalls {
		frequentWords = append(frequentWords, vocabWord(i))
		spreadWords = append(spreadWords, vocabWord(kaltRecalls+i*(kaltVocab-kaltRecalls)/kaltRecalls))
	}
	latFreq, cpuFreq := kaltSeries(t, srv, a, frequentWords)
	latSpread, cpuSpread := kaltSeries(t, srv, a, spreadWords)
	rss2, _ := srv.memory()
	a.c.Close()
	stop1 := srv.stop()

	// 1,000 changes while the server is down, then start 2: the index must
	// catch up with them before the first recall answers.
	chg := runMunin(t, bin, "import", "--data", data, ref, changes)
	replaced, forgot := kaltChanges(n)
	srv = startServe(t, bin, data)
	a = kaltConnect(t, srv, token)
	r := replaced[len(replaced)/2]
	catchReq, catchTotal := kaltFirstRecall(t, srv, a, kaltWord(r, 2), kaltSlug(r), 2)
	rss3, peak3 := srv.memory()
	up2, cpu2 := srv.up, srv.cpu()
	kaltCheckChanges(t, a, n, replaced, forgot)
	a.c.Close()
	stop2 := srv.stop()

	index, hasIndex := diskUse(filepath.Join(data, "index"))
	dbs, _ := filepath.Glob(filepath.Join(data, "*.db"))
	var sqlite uint64
	for _, f := range dbs {
		s, _ := diskUse(f)
		sqlite += s
	}

	which := "frisch gebaut"
	if *lastMunin != "" {
		which = *lastMunin
	}
	fmt.Printf("Kaltstart %s: %d Einträge zu je etwa %d Wörtern in einem Projekt, munin (%s) als eigener Prozess, GOMAXPROCS des Tests %d\n",
		time.Now().Format("2006-01-02 15:04"), n, kaltWords+1, which, runtime.GOMAXPROCS(0))
	fmt.Printf("Import: %d Fassungen (%.1f MiB JSONL) in %s, Spitze %.0f MiB RSS\n", n, mib(uint64(size)), sec(imp.wall), mib(imp.maxRSS))
	fmt.Printf("Voller Indexaufbau (munin reindex): %s\n", buildNote)
	fmt.Printf("Start: Port offen nach %s; erstes recall %s nach der Anfrage, %s nach dem Prozessstart (%.2f × voller Aufbau), Server-CPU bis dahin %s; RSS danach %.0f MiB (Spitze %.0f MiB)\n",
		ms(up1), sec(firstReq), sec(firstTotal), firstTotal.Seconds()/built.Seconds(), sec(cpu1), mib(rss1), mib(peak1))
	fmt.Printf("Zweites recall (häufigstes Wort): %s; Beenden mit SIGTERM: %s nach dem ersten, %s nach dem zweiten Start\n", ms(second), ms(stop1), ms(stop2))
	fmt.Printf("recall bei %d Einträgen (ein Client, je %d verschiedene Wörter nacheinander): häufige Wörter p50 %s, p99 %s, max %s, Server-CPU %s je recall; über den Wortschatz verteilte p50 %s, p99 %s, max %s, Server-CPU %s je recall; RSS danach %.0f MiB\n",
		n, kaltRecalls, ms(pct(latFreq, 50)), ms(pct(latFreq, 99)), ms(pct(latFreq, 100)), ms(cpuFreq),
		ms(pct(latSpread, 50)), ms(pct(latSpread, 99)), ms(pct(latSpread, 100)), ms(cpuSpread), mib(rss2))
	fmt.Printf("Nachholen: %d Änderungen bei gestopptem Server (%d neu, %d ersetzt, %d vergessen; import %s); Port offen nach %s, erstes recall %s nach der Anfrage, %s nach dem Prozessstart (%.2f × voller Aufbau), Server-CPU bis dahin %s; RSS danach %.0f MiB (Spitze %.0f MiB)\n",
		kaltNew+kaltReplaced+kaltForgot, kaltNew, kaltReplaced, kaltForgot, sec(chg.wall), ms(up2), sec(catchReq), sec(catchTotal), catchTotal.Seconds()/built.Seconds(), sec(cpu2), mib(rss3), mib(peak3))
	if hasIndex {
		fmt.Printf("Platte: Index %s/index %.1f MiB (%.1f MiB je 10 000 Einträge), SQLite %.1f MiB\n", "<data>", mib(index), mib(index)*10000/float64(n+kaltNew-kaltForgot), mib(sqlite))
	} else {
		fmt.Printf("Platte: kein Index unter <data>/index (er lebt im Speicher), SQLite %.1f MiB\n", mib(sqlite))
	}
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// kaltSeries recalls each word once, one after the other, and returns the
// sorted latencies and the server's CPU time per recall.
func kaltSeries(t testing.TB, srv *serveProc, a *agent, words []string) ([]time.Duration, time.Duration) {
	cpu0 := srv.cpu()
	lat := make([]time.Duration, 0, len(words))
	for _, w := range words {
		start := time.Now()
		if _, err := a.call(context.Background(), "recall", map[string]any{"query": w}); err != nil {
			t.Fatalf("recall %q: %v", w, err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat, (srv.cpu() - cpu0) / time.Duration(len(words))
}

// kaltConnect opens one MCP session with the key.
func kaltConnect(t testing.TB, srv *serveProc, token string) *agent {
	hc := transportFor(1)
	t.Cleanup(hc.CloseIdleConnections)
	a, _, err := connect(context.Background(), hc, srv.url, token, 0)
	if err != nil {
		t.Fatalf("verbinden: %v\n%s", err, srv.logTail())
	}
	return a
}

// kaltFirstRecall is a started server's first recall: of word, which must
// find slug in version; it returns the time from the request and from the
// process start to the answer.
func kaltFirstRecall(t testing.TB, srv *serveProc, a *agent, word, slug string, version int) (fromReq, fromStart time.Duration) {
	start := time.Now()
	hits := kaltRecall(t, a, word)
	fromReq, fromStart = time.Since(start), time.Since(srv.started)
	if !slices.Contains(hits, kaltHit{slug, version}) {
		t.Errorf("erstes recall %q: %v, erwartet %s v%d", word, hits, slug, version)
	}
	return fromReq, fromStart
}

func kaltRecall(t testing.TB, a *agent, word string) []kaltHit {
	sc, err := a.call(context.Background(), "recall", map[string]any{"query": word, "limit": 50})
	if err != nil {
		t.Fatalf("recall %q: %v", word, err)
	}
	var res struct {
		Hits []kaltHit `json:"hits"`
	}
	decode(t, sc, &res)
	return res.Hits
}

// kaltCheckChanges checks after the catch-up, for a sample of each kind of
// change made while the server was down: a new entry's word finds it, a
// replaced entry's new word finds its second version and its old word does
// not find it, a forgotten entry's word does not find it.
func kaltCheckChanges(t testing.TB, a *agent, n int, replaced, forgot []int) {
	has := func(hits []kaltHit, slug string) bool {
		return slices.ContainsFunc(hits, func(h kaltHit) bool { return h.Slug == slug })
	}
	for k := 0; k < kaltNew; k += kaltNew / 10 {
		i := n + k
		if hits := kaltRecall(t, a, kaltWord(i, 1)); !slices.Contains(hits, kaltHit{kaltSlug(i), 1}) {
			t.Errorf("neuer Eintrag %s: recall %q findet ihn nicht (%v)", kaltSlug(i), kaltWord(i, 1), hits)
		}
	}
	for k := 0; k < len(replaced); k += len(replaced) / 10 {
		i := replaced[k]
		if hits := kaltRecall(t, a, kaltWord(i, 2)); !slices.Contains(hits, kaltHit{kaltSlug(i), 2}) {
			t.Errorf("ersetzter Eintrag %s: recall %q findet v2 nicht (%v)", kaltSlug(i), kaltWord(i, 2), hits)
		}
		if hits := kaltRecall(t, a, kaltWord(i, 1)); has(hits, kaltSlug(i)) {
			t.Errorf("ersetzter Eintrag %s: recall des alten Worts %q findet ihn noch (%v)", kaltSlug(i), kaltWord(i, 1), hits)
		}
	}
	for k := 0; k < len(forgot); k += len(forgot) / 10 {
		i := forgot[k]
		if hits := kaltRecall(t, a, kaltWord(i, 1)); has(hits, kaltSlug(i)) {
			t.Errorf("vergessener Eintrag %s: recall %q findet ihn noch (%v)", kaltSlug(i), kaltWord(i, 1), hits)
		}
	}
}
