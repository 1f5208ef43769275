//go:build last

// Setup 5's proof after the load: no acknowledged proposal lost, every
// acknowledged decision stored as it was answered, approved proposals are
// the entries' versions 1..n without gaps or doubles, stale entries stay out
// of recall and come back with include_stale, and what the checks during
// the load counted.

package lasttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxProposalPages bounds the listing of every proposal (50 a page).
const maxProposalPages = 10000

// checkReview runs the end checks of setup 5 with the reviewer (to list
// every proposal) and a session with the project's read key, prints what it
// proved and returns the approvals of contested slugs per project — the
// writes setup 1's stock check (checkStock) counts there.
func checkReview(t testing.TB, srv *server, p *pruefer) map[string]int {
	ctx := context.Background()
	st := p.st
	all := map[string]proposalView{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxProposalPages {
			t.Fatalf("mehr als %d Seiten Vorschläge", maxProposalPages)
		}
		views, next, err := p.list(ctx, "all", cursor)
		if err != nil {
			t.Fatalf("Vorschläge lesen: %v", err)
		}
		for _, v := range views {
			all[v.ID] = v
		}
		if next == "" {
			break
		}
		cursor = next
	}
	st.mu.Lock()
	defer st.mu.Unlock()

	// Every acknowledged proposal is there, as it was proposed.
	for id, word := range st.acked {
		v, ok := all[id]
		want := st.words[word]
		switch {
		case !ok:
			t.Errorf("bestätigter Vorschlag %s (%s von %s) fehlt", id, want.slug, agentName(want.agent))
		case v.Slug != want.slug || v.Agent != agentName(want.agent) || !strings.HasPrefix(v.Content, word+":"):
			t.Errorf("Vorschlag %s: %s von %s mit %.20q, vorgeschlagen war %s von %s mit dem Wort %s",
				id, v.Slug, v.Agent, v.Content, want.slug, agentName(want.agent), word)
		}
	}
	// Every acknowledged decision is stored as answered.
	for id, d := range st.decided {
		v := all[id]
		if v.State != d.state || v.Version != d.version || (d.state == "rejected" && v.Reason != d.reason) {
			t.Errorf("Vorschlag %s: gespeichert %s v%d (Grund %q), bestätigt war %s v%d", id, v.State, v.Version, v.Reason, d.state, d.version)
		}
	}

	// Approved proposals are the versions 1..n of their entry, each once,
	// and the entry's latest version is the last approved one, written in
	// its proposer's name.
	bySlug := map[string][]proposalView{}
	counts := map[string]int{}
	for _, v := range all {
		counts[v.State]++
		if v.State == "approved" {
			bySlug[v.Slug] = append(bySlug[v.Slug], v)
		}
	}
	reader := checkSession(t, srv)
	defer reader.c.Close()
	expired, superseded := 0, 0
	for slug, vs := range bySlug {
		slices.SortFunc(vs, func(a, b proposalView) int { return a.Version - b.Version })
		for i, v := range vs {
			if v.Version != i+1 {
				t.Errorf("%s: freigegebene Vorschläge ergeben die Fassungen %v, nicht 1..%d", slug, versionsOf(vs), len(vs))
				break
			}
		}
		var got struct {
			LatestVersion int    `json:"latest_version"`
			Agent         string `json:"agent"`
			Expired       bool   `json:"expired"`
			SupersededBy  string `json:"superseded_by"`
		}
		sc, err := reader.call(ctx, "get", map[string]any{"slug": slug})
		if err != nil {
			t.Errorf("get %s: %v", slug, err)
			continue
		}
		decode(t, sc, &got)
		last := vs[len(vs)-1]
		if got.LatestVersion != len(vs) || got.Agent != last.Agent {
			t.Errorf("get %s: v%d von %s; %d Vorschläge freigegeben, der letzte von %s", slug, got.LatestVersion, got.Agent, len(vs), last.Agent)
		}
		if from, ok := st.staleFrom[slug]; ok && from.Before(time.Now()) {
			if strings.HasPrefix(slug, "frist/") && !got.Expired {
				t.Errorf("get %s: nicht expired, gültig nur bis %s", slug, from.Format(time.RFC3339Nano))
			}
			if strings.HasPrefix(slug, "alt/") && got.SupersededBy == "" {
				t.Errorf("get %s: ohne superseded_by, ersetzt seit %s", slug, from.Format(time.RFC3339Nano))
			}
		}
	}

	// A stale entry: not found by its unique word without include_stale,
	// found and marked with it.
	now := time.Now()
	for _, slug := range st.staleList {
		if !st.staleFrom[slug].Before(now) {
			continue // its valid_until is still ahead
		}
		word := st.staleWord[slug]
		for _, stale := range []bool{false, true} {
			// Limit 50: live entries whose unique words are one typo away
			// rank above a stale hit.
			args := map[string]any{"query": word, "limit": 50}
			if stale {
				args["include_stale"] = true
			}
			sc, err := reader.call(ctx, "recall", args)
			if err != nil {
				t.Errorf("recall %v: %v", args, err)
				continue
			}
			var res struct {
				Hits []struct {
					Slug  string `json:"slug"`
					State string `json:"state"`
				} `json:"hits"`
			}
			decode(t, sc, &res)
			i := slices.IndexFunc(res.Hits, func(h struct {
				Slug  string `json:"slug"`
				State string `json:"state"`
			}) bool {
				return h.Slug == slug
			})
			switch {
			case !stale && i >= 0:
				t.Errorf("recall %q ohne include_stale findet %s (state %q), veraltet seit %s", word, slug, res.Hits[i].State, st.staleFrom[slug].Format(time.RFC3339Nano))
			case stale && i < 0:
				t.Errorf("recall %q mit include_stale findet %s nicht (Treffer %v)", word, slug, res.Hits)
			case stale && res.Hits[i].State != "expired" && res.Hits[i].State != "superseded":
				t.Errorf("recall %q mit include_stale: %s mit state %q", word, slug, res.Hits[i].State)
			case stale && res.Hits[i].State == "expired":
				expired++
			case stale:
				superseded++
			}
		}
	}

	if st.foreign > 0 || st.stale > 0 || st.direct > 0 {
		t.Errorf("während der Last: %d fremde oder unbekannte offene Vorschläge in recall, %d veraltete Treffer ohne include_stale, %d remember ohne Vorschlag; zuerst: %s",
			st.foreign, st.stale, st.direct, st.firstViolation)
	}
	if len(st.acked) == 0 || counts["approved"] == 0 {
		t.Errorf("%d Vorschläge bestätigt, %d freigegeben: der Test hat zu wenig bewiesen", len(st.acked), counts["approved"])
	}
	fmt.Printf("Prüfer über %s. Vorschläge: %d bestätigt, %d freigegeben, %d abgelehnt, %d offen; abgewiesen: %d wegen voller Warteschlange, %d mit valid_until schon verstrichen\n",
		p.weg(), len(st.acked), counts["approved"], counts["rejected"], counts["pending"], st.queueFull, st.tooLate)
	if !t.Failed() {
		fmt.Printf("Vorschläge geprüft: keiner verloren, %d Einträge mit lückenlosen Fassungen aus Freigaben; %d recalls während der Last (%d gezielt nach Veraltetem) ohne fremden Vorschlag (%d eigene offene gesehen) und ohne Veraltetes; am Ende %d abgelaufene und %d ersetzte Einträge nur mit include_stale gefunden\n",
			len(bySlug), st.recalls, st.targeted, st.ownPending, expired, superseded)
	}
	return map[string]int{st.project: st.approvedContested}
}

func versionsOf(vs []proposalView) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

// checkSession connects with the (one) project's read key.
func checkSession(t testing.TB, srv *server) *agent {
	hc := transportFor(1)
	reader, _, err := connect(context.Background(), hc, srv.url, srv.checkers[0], -60)
	if err != nil {
		t.Fatalf("verbinden zur Prüfung: %v", err)
	}
	return reader
}
