//go:build last

// The search mix (-last.suchmix): a share of the recalls asks as agents
// often do — a domain word with a typo, a compound of two domain words whose
// parts the notes hold apart, or the parts of a compound a note holds,
// spelled apart. None of them finds a note by its words as written, so they
// run through recall's compound and typo tiers; the eight domain words never
// do (their hits fill the limit in the first tier). checkMix proves it
// before each load phase.

package lasttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// recallMix is the key under which an agent also records the latency of a
// recall with a query of the mix (the row "recall" holds all recalls).
const recallMix = "davon Suchmix"

// komposita are the compounds the seed puts in every fourth entry (one per
// entry, in turn), with their parts spelled apart as a query. The parts
// occur nowhere else in the seed.
var komposita = []struct{ wort, teile string }{
	{"Fehlerbericht", "Bericht über den Fehler"},
	{"Testumgebung", "Umgebung für Tests"},
	{"Serverneustart", "Neustart des Servers"},
	{"Releaseplan", "Plan für das Release"},
}

// seedCompound is the compound seeded entry i holds, or "". Without a mix
// the seed is the one from before the mix.
func seedCompound(i int) string {
	if i%4 != 0 || *lastSuchmix == 0 {
		return ""
	}
	return komposita[(i/4)%len(komposita)].wort
}

// seedContent is seeded entry i: two of the eight domain words, and in every
// fourth entry a compound.
func seedContent(i int) (content, tag string) {
	a, b := terms[i%len(terms)], terms[(i/len(terms)+i+1)%len(terms)]
	content = fmt.Sprintf("Notiz %d zu %s und %s\n\nWas das Team über %s beschlossen hat und warum; offen bleibt die Frage nach %s.", i, a, b, a, b)
	if c := seedCompound(i); c != "" {
		content += fmt.Sprintf(" Siehe auch: %s.", c)
	}
	return content, a
}

// suchanfrage is one query of the mix: its kind, its text, the words (lower
// case) an entry it finds holds, and the query that finds such entries by
// their words as written (-last.suchmixrichtig).
type suchanfrage struct {
	art, text string
	woerter   []string
	richtig   string
}

// query is the text an agent sends: as in the mix, or as written right.
func (q suchanfrage) query() string {
	if *lastMixRichtig {
		return q.richtig
	}
	return q.text
}

// mix is the search mix of this run (mixQueries of -last.eintraege), set by
// Run before any agent starts.
var mix []suchanfrage

// mixQueries lists the queries of the mix that find an entry among the
// first n seeded ones: a typo (one edit) of each domain word, compounds of
// two domain words that seeded entries hold apart, and the seeded compounds'
// parts spelled apart.
func mixQueries(n int) []suchanfrage {
	var all []suchanfrage
	for _, q := range [][2]string{
		{"datenbnak", "datenbank"}, {"schnitstelle", "schnittstelle"}, {"sicherugn", "sicherung"},
		{"migraton", "migration"}, {"zugrif", "zugriff"}, {"leistnug", "leistung"},
		{"portokoll", "protokoll"}, {"speichre", "speicher"},
	} {
		all = append(all, suchanfrage{"Tippfehler", q[0], []string{q[1]}, q[1]})
	}
	for _, q := range [][3]string{
		{"Datenbankschnittstelle", "datenbank", "schnittstelle"}, {"Leistungsprotokoll", "leistung", "protokoll"},
		{"Protokollspeicher", "protokoll", "speicher"}, {"Datenbankspeicher", "datenbank", "speicher"},
	} {
		all = append(all, suchanfrage{"Kompositum", q[0], []string{q[1], q[2]}, q[1] + " " + q[2]})
	}
	for _, k := range komposita {
		all = append(all, suchanfrage{"Teile", k.teile, []string{strings.ToLower(k.wort)}, k.wort})
	}
	var out []suchanfrage
	for _, q := range all {
		if len(q.expected(n)) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// expected lists the slugs of the first n seeded entries that hold all of
// the query's words.
func (q suchanfrage) expected(n int) []string {
	var slugs []string
	for i := range n {
		content, _ := seedContent(i)
		content = strings.ToLower(content)
		if !slices.ContainsFunc(q.woerter, func(w string) bool { return !strings.Contains(content, w) }) {
			slugs = append(slugs, seededSlug(i))
		}
	}
	return slugs
}

// recallQuery picks an agent's next recall query: one of the mix in
// -last.suchmix percent of the calls, else a domain word. mixed says which.
// Without a mix it draws exactly as before the mix existed.
func recallQuery(rng *rand.Rand) (query string, mixed bool) {
	if *lastSuchmix > 0 && len(mix) > 0 && rng.IntN(100) < *lastSuchmix {
		return mix[rng.IntN(len(mix))].query(), true
	}
	return terms[rng.IntN(len(terms))], false
}

// checkMix runs every query of the mix once on the freshly seeded project
// with the first project's read key, before the load. With compounds and
// typos on, each must find entries, and only entries holding its words;
// with -last.genau, none may find anything: so the hits come from the
// compound and typo tiers, and the mix measures them. With
// -last.suchmixrichtig each finds an entry holding its words first, either
// way. quiet: no line. A load without recalls (-last.schreibanteil=100)
// skips it: its recalls would open the index, and every write would then
// pay a refresh that the write-only measurement has never included.
func checkMix(t testing.TB, srv *server, quiet bool) {
	if *lastSuchmix == 0 || *lastSchreibanteil >= 100 {
		return
	}
	ctx := context.Background()
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	reader, _, err := connect(ctx, hc, srv.url, srv.checkers[0], -1000)
	if err != nil {
		t.Fatalf("verbinden zur Prüfung des Suchmix: %v", err)
	}
	defer reader.c.Close()
	kinds, bad := map[string]int{}, 0
	fail := func(format string, args ...any) {
		bad++
		t.Errorf(format, args...)
	}
	for _, q := range mix {
		kinds[q.art]++
		text := q.query()
		sc, err := reader.call(ctx, "recall", map[string]any{"query": text})
		if err != nil {
			t.Fatalf("Suchmix recall %q: %v", text, err)
		}
		var all struct {
			Hits []struct {
				Slug  string `json:"slug"`
				Match string `json:"match"`
			} `json:"hits"`
		}
		decode(t, sc, &all)
		// Hits by meaning alone (-last.einbettung) are not the tiers'.
		var found []string
		for _, h := range all.Hits {
			if h.Match != "meaning" {
				found = append(found, h.Slug)
			}
		}
		want := q.expected(*lastEintraege)
		switch {
		case *lastMixRichtig && (len(found) == 0 || !slices.Contains(want, found[0])):
			fail("Suchmix richtig geschrieben %q findet zuerst keinen der %d Einträge mit %v (Treffer %v)", text, len(want), q.woerter, found)
		case *lastMixRichtig:
		case *lastGenau && len(found) > 0:
			fail("Suchmix %s %q findet mit -last.genau %v: die Anfrage braucht die Stufen nicht und misst sie nicht", q.art, q.text, found)
		case !*lastGenau && len(found) == 0:
			fail("Suchmix %s %q findet nichts (erwartet: einen von %d Einträgen mit %v)", q.art, q.text, len(want), q.woerter)
		case !*lastGenau:
			for _, slug := range found {
				if !slices.Contains(want, slug) {
					fail("Suchmix %s %q findet %s, der %v nicht enthält", q.art, q.text, slug, q.woerter)
				}
			}
		}
	}
	if quiet || bad > 0 {
		return
	}
	what := "jede findet Einträge, nur solche mit ihren Wörtern"
	switch {
	case *lastMixRichtig:
		what = "richtig geschrieben findet jede zuerst einen Eintrag mit ihren Wörtern"
	case *lastGenau:
		what = "mit -last.genau findet keine etwas"
	}
	fmt.Printf("Suchmix: %d %% der recalls aus %d Anfragen (%d Tippfehler, %d Komposita, %d getrennte Teile eines Kompositums); vor der Last geprüft: %s\n",
		*lastSuchmix, len(mix), kinds["Tippfehler"], kinds["Kompositum"], kinds["Teile"], what)
}
