//go:build last

// Setup 5, review before trust: one project whose agents' writes wait for
// review (the project's review setting is agents; every other agent holds a
// propose key instead of a write key), and one reviewer agent with an admin
// key that lists the pending proposals and approves most and rejects some
// (pruefer.go). A tenth of the proposals carry a short valid_until, a fifth
// make a new slug or, once the proposer has one approved, replace it by
// another (supersedes); the rest go to the contested slugs as in setup 1.
//
// What the agents know is kept in one stand: which agent proposed which
// unique word (so that a pending hit can be told to be the caller's own),
// which proposals were acknowledged and decided, and since when an entry is
// stale — its valid_until passed after its approval was acknowledged, or
// the approval of a write that supersedes it was. Every recall answer
// during the load is checked against it (checkRecall); the end checks are in
// pruefung_check.go.

package lasttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Kinds of proposals in setup 5.
const (
	artUmkaempft = "umkämpft" // a contested slug, as in setup 1
	artFrist     = "frist"    // a new slug with a short valid_until
	artAlt       = "alt"      // a new slug that a later proposal supersedes
	artNeu       = "neu"      // a new slug that supersedes one of the proposer's alt slugs
)

// vorschlag is what an agent proposed under one unique word.
type vorschlag struct {
	agent      int
	project    string
	slug, kind string
	validUntil time.Time // artFrist
	supersedes string    // artNeu: the alt slug it replaces
}

// entscheid is a decision the reviewer saw acknowledged.
type entscheid struct {
	state   string // approved or rejected
	version int    // approved: the version written
	reason  string
}

// stand is the shared knowledge of setup 5's agents and reviewer.
type stand struct {
	project string
	mu      sync.Mutex
	// words: unique word → its proposal, registered before remember is sent.
	words map[string]vorschlag
	// acked: proposal id → unique word, for every proposing remember that
	// answered state pending.
	acked map[string]string
	// decided: proposal id → the decision whose call succeeded.
	decided map[string]entscheid
	// staleFrom: slug → the moment from which no recall may return it
	// without include_stale; staleList holds the same slugs in order.
	staleFrom map[string]time.Time
	staleList []string
	staleWord map[string]string
	// freeAlt: agent → its approved alt slugs not yet superseded by a
	// proposal of its own.
	freeAlt map[int][]string
	// approvedContested counts approvals of contested slugs (setup 1's
	// stock check counts them as that project's writes).
	approvedContested int
	// queueFull counts proposing remembers refused because the project's
	// pending queue was full (budget_exhausted), tooLate those whose
	// valid_until passed before they arrived: refusals, not failures.
	queueFull, tooLate int
	// What the checks during the load saw.
	recalls, targeted int
	// ownPending counts pending hits that were the caller's own: the
	// ownership check had something to check.
	ownPending     int
	foreign, stale int
	// direct counts remembers that did not answer as a proposal.
	direct         int
	firstViolation string
}

func newStand(project string) *stand {
	return &stand{project: project, words: map[string]vorschlag{}, acked: map[string]string{}, decided: map[string]entscheid{},
		staleFrom: map[string]time.Time{}, staleWord: map[string]string{}, freeAlt: map[int][]string{}}
}

// wordRE finds a unique word (uniqueWord) in a title or snippet.
var wordRE = regexp.MustCompile(`qy[bcdfghjklmnpqrstvwxz]+y[bcdfghjklmnpqrstvwxz]+y`)

// propose is one remember of an agent in setup 5: it becomes a proposal.
func (a *agent) propose(ctx context.Context, rng *rand.Rand, n int) {
	st := a.review
	word := uniqueWord(a.id, n)
	v := vorschlag{agent: a.id, project: st.project, kind: artUmkaempft, slug: contestedSlug(rng.IntN(*lastSlugs))}
	args := map[string]any{}
	content := rememberContent(a.id, n, word)
	switch k := rng.IntN(10); {
	case k == 0:
		// Valid for 0.5 to 2.5 s from now: some expire during the load,
		// some only after it, some before the reviewer gets to them.
		v.kind, v.slug = artFrist, fmt.Sprintf("frist/a%03d-%d", a.id, n)
		v.validUntil = time.Now().Add(time.Duration(500+rng.IntN(2000)) * time.Millisecond).UTC()
		args["valid_until"] = v.validUntil.Format(time.RFC3339Nano)
		content = fmt.Sprintf("%s: Frist von %s bis %s\n\nGilt nur kurz, was das Team zu %s sagt.", word, agentName(a.id),
			v.validUntil.Format(time.RFC3339Nano), terms[n%len(terms)])
	case k <= 2:
		st.mu.Lock()
		free := st.freeAlt[a.id]
		if len(free) > 0 {
			v.kind, v.supersedes = artNeu, free[0]
			st.freeAlt[a.id] = free[1:]
		}
		st.mu.Unlock()
		if v.kind == artNeu {
			v.slug = fmt.Sprintf("neu/a%03d-%d", a.id, n)
			args["supersedes"] = []string{v.supersedes}
			content = fmt.Sprintf("%s: Ersatz von %s für %s\n\nGilt statt der alten Notiz zu %s.", word, agentName(a.id), v.supersedes, terms[n%len(terms)])
			break
		}
		v.kind, v.slug = artAlt, fmt.Sprintf("alt/a%03d-%d", a.id, n)
		content = fmt.Sprintf("%s: Alte Notiz von %s\n\nWird bald ersetzt; sie handelt von %s.", word, agentName(a.id), terms[n%len(terms)])
	}
	args["slug"], args["content"] = v.slug, content
	// Registered before the call: a leak could show the proposal to
	// another agent before its proposer has the answer.
	st.mu.Lock()
	st.words[word] = v
	st.mu.Unlock()

	firstErr := a.firstErr
	sc, err := a.call(ctx, "remember", args)
	if err != nil {
		refused := &st.queueFull
		switch {
		case strings.Contains(err.Error(), "budget_exhausted"):
			// The pending queue is full (memory.MaxPendingProposals): the
			// server refuses, as documented, until the reviewer catches up.
		case v.kind == artFrist && strings.Contains(err.Error(), "not in the future") && !time.Now().Before(v.validUntil):
			// The call took longer than the fact was valid (a loaded
			// machine): refused as documented, a valid_until must lie
			// ahead when the write arrives.
			refused = &st.tooLate
		default:
			refused = nil
		}
		if refused != nil {
			a.err["remember"]--
			a.firstErr = firstErr
			st.mu.Lock()
			*refused++
			st.mu.Unlock()
		}
		if v.kind == artNeu {
			// Not proposed: the alt slug is free again.
			st.mu.Lock()
			st.freeAlt[a.id] = append(st.freeAlt[a.id], v.supersedes)
			st.mu.Unlock()
		}
		return
	}
	var res struct {
		State    string `json:"state"`
		Proposal string `json:"proposal"`
		Version  int    `json:"version"`
	}
	err = decodeInto(sc, &res)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil || res.State != "pending" || res.Proposal == "" {
		st.violation(&st.direct, fmt.Sprintf("remember von %s auf %s wurde kein Vorschlag: state %q, version %d", agentName(a.id), v.slug, res.State, res.Version))
		return
	}
	st.acked[res.Proposal] = word
}

// approved records an acknowledged approval of the proposal with unique
// word at moment at.
func (st *stand) approved(id, word string, version int, at time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.decided[id] = entscheid{state: "approved", version: version}
	v, ok := st.words[word]
	if !ok {
		return // reported by the end check (a proposal nobody made)
	}
	switch v.kind {
	case artUmkaempft:
		st.approvedContested++
	case artFrist:
		st.markStale(v.slug, word, later(at, v.validUntil))
	case artAlt:
		st.freeAlt[v.agent] = append(st.freeAlt[v.agent], v.slug)
		st.staleWord[v.slug] = word
	case artNeu:
		st.markStale(v.supersedes, st.staleWord[v.supersedes], at)
	}
}

// markStale records that slug is stale from moment from (the first time
// counts: an entry once superseded stays so, nobody writes it again).
func (st *stand) markStale(slug, word string, from time.Time) {
	if _, ok := st.staleFrom[slug]; ok {
		return
	}
	st.staleFrom[slug], st.staleWord[slug] = from, word
	st.staleList = append(st.staleList, slug)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// staleQuery is, for one recall in five once something went stale, the
// unique word of a stale entry: a query that finds it and nothing else, so
// that a stale entry let through would show.
func (st *stand) staleQuery(rng *rand.Rand) (string, bool) {
	if rng.IntN(5) != 0 {
		return "", false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.staleList) == 0 {
		return "", false
	}
	st.targeted++
	return st.staleWord[st.staleList[rng.IntN(len(st.staleList))]], true
}

// checkRecall checks one recall answer of agent id, sent at start without
// include_stale: a pending hit must be the caller's own proposal, no hit may
// be marked stale, and no live hit may be an entry that was stale before
// the recall was sent (a supersede or expiry racing the recall may go
// either way).
func (st *stand) checkRecall(id int, start time.Time, sc any) {
	var res struct {
		Hits []struct {
			Slug    string `json:"slug"`
			Title   string `json:"title"`
			Snippet string `json:"snippet"`
			State   string `json:"state"`
		} `json:"hits"`
	}
	err := decodeInto(sc, &res)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.recalls++
	if err != nil {
		st.violation(&st.foreign, fmt.Sprintf("recall von %s: Antwort nicht lesbar: %v", agentName(id), err))
	}
	for _, h := range res.Hits {
		switch h.State {
		case "pending":
			word := wordRE.FindString(h.Title + " " + h.Snippet)
			v, ok := st.words[word]
			if ok && v.agent == id {
				st.ownPending++
			}
			if !ok || v.agent != id {
				who := "niemandem zuzuordnen"
				if ok {
					who = "von " + agentName(v.agent)
				}
				st.violation(&st.foreign, fmt.Sprintf("recall von %s lieferte einen offenen Vorschlag %s auf %s (Titel %q)", agentName(id), who, h.Slug, h.Title))
			}
		case "":
			if from, ok := st.staleFrom[h.Slug]; ok && from.Before(start) {
				st.violation(&st.stale, fmt.Sprintf("recall von %s ohne include_stale lieferte %s, veraltet seit %s, gesendet %s danach",
					agentName(id), h.Slug, from.Format("15:04:05.000"), start.Sub(from).Round(time.Millisecond)))
			}
		default:
			st.violation(&st.stale, fmt.Sprintf("recall von %s ohne include_stale lieferte %s mit state %q", agentName(id), h.Slug, h.State))
		}
	}
}

// violation counts one broken rule in *n and keeps the first text; st.mu
// is held.
func (st *stand) violation(n *int, text string) {
	*n++
	if st.firstViolation == "" {
		st.firstViolation = text
	}
}
