//go:build cluster

// The verdict on what each feed subscriber received (feed_subscriber.go),
// against the ledger's acknowledged writes: every acknowledged version,
// approval and — for a subscriber with admin keys — proposal and rejection
// appears exactly once; per entry the versions come in ascending order and
// per project in commit order, which the acks show wherever one answer came
// before the next call was sent; nothing a read key may not see appears;
// and no version appears that the cluster does not hold at the end. A write
// whose answer never came (unavailable, no answer) may or may not appear,
// once at most: the ledger holds only acknowledged writes.

package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// feedItem is one acknowledged write as the feed must show it.
type feedItem struct {
	key     string // versionKey or proposalKey
	project string
	kind    string
	agent   string // "" where the ledger does not know the key's agent name
	sent    time.Time
	done    time.Time
}

func versionKey(project, slug string, v int) string {
	return fmt.Sprintf("v|%s|%s|%d", project, slug, v)
}

func proposalKey(id, kind string) string { return "p|" + id + "|" + kind }

// changeKey is the identity of a received change: a version for the kinds
// that write one, the proposal and kind for propose and reject.
func changeKey(ch feedChange) string {
	if ch.Kind == "propose" || ch.Kind == "reject" {
		return proposalKey(ch.Proposal, ch.Kind)
	}
	return versionKey(ch.Project, ch.Slug, ch.Version)
}

// expectedItems lists what a subscriber must receive: every ack (a
// remember; a probe's key has another agent name than the probe, so its
// agent is not compared), every approval, and with proposals (admin keys)
// every proposal and rejection — in the projects it reads.
func expectedItems(acks []ack, props []proposalAck, decs []decisionAck, projects map[string]bool, proposals bool) []feedItem {
	var out []feedItem
	for _, a := range acks {
		if !projects[a.project] {
			continue
		}
		agent := a.agent
		if strings.HasPrefix(agent, "sonde-") {
			agent = ""
		}
		out = append(out, feedItem{versionKey(a.project, a.slug, a.version), a.project, "remember", agent, a.sent, a.done})
	}
	for _, d := range decs {
		p := d.proposal
		if !projects[p.project] {
			continue
		}
		if d.approved {
			out = append(out, feedItem{versionKey(p.project, p.slug, d.version), p.project, "approve", d.reviewer, d.sent, d.done})
		} else if proposals {
			out = append(out, feedItem{proposalKey(p.id, "reject"), p.project, "reject", d.reviewer, d.sent, d.done})
		}
	}
	if proposals {
		for _, p := range props {
			if projects[p.project] {
				out = append(out, feedItem{proposalKey(p.id, "propose"), p.project, "propose", p.agent, p.sent, p.done})
			}
		}
	}
	return out
}

// feedVerdict is what one subscriber's check found.
type feedVerdict struct {
	name     string
	role     string
	received int
	expected int
	found    int
	missing  int // acknowledged, not received
	twice    int // received more than once
	disorder int // a version not above the entry's previous one, or an ack after one answered later
	wrong    int // received with another kind or agent than acknowledged, or in a project it does not read
	hidden   int // a proposal or rejection received by a read key
	phantom  int // a version the cluster does not hold at the end
	problems []string
}

func (v *feedVerdict) problem(counter *int, format string, args ...any) {
	*counter++
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// checkFeed compares what s received (in order) with the expected items.
func checkFeed(name, role string, got []feedChange, items []feedItem, projects map[string]bool) *feedVerdict {
	v := &feedVerdict{name: name, role: role, received: len(got), expected: len(items)}
	pos := map[string]int{}
	lastVersion := map[slugRef]int{}
	for i, ch := range got {
		k := changeKey(ch)
		if _, dup := pos[k]; dup {
			v.problem(&v.twice, "%s: %s %s %s v%d %s zweimal erhalten", name, ch.Kind, ch.Project, ch.Slug, ch.Version, ch.Proposal)
		} else {
			pos[k] = i
		}
		if !projects[ch.Project] {
			v.problem(&v.wrong, "%s: Änderung in fremdem Projekt %s", name, ch.Project)
		}
		switch ch.Kind {
		case "propose", "reject":
			if role != "admin" {
				v.problem(&v.hidden, "%s (%s): %s von %s sichtbar", name, role, ch.Kind, ch.Proposal)
			}
		case "remember", "forget", "import", "approve":
			r := slugRef{ch.Project, ch.Slug}
			if ch.Version <= lastVersion[r] {
				v.problem(&v.disorder, "%s: %s %s v%d nach v%d", name, ch.Project, ch.Slug, ch.Version, lastVersion[r])
			}
			lastVersion[r] = max(lastVersion[r], ch.Version)
		default:
			v.problem(&v.wrong, "%s: unbekannte Art %q", name, ch.Kind)
		}
	}
	for _, it := range items {
		i, ok := pos[it.key]
		if !ok {
			v.problem(&v.missing, "%s: bestätigt, nicht im Feed: %s %s", name, it.kind, it.key)
			continue
		}
		v.found++
		if ch := got[i]; ch.Kind != it.kind || (it.agent != "" && ch.Agent != it.agent) {
			v.problem(&v.wrong, "%s: %s als %s von %s erhalten, bestätigt als %s von %s", name, it.key, ch.Kind, ch.Agent, it.kind, it.agent)
		}
	}
	checkCommitOrder(v, items, pos)
	return v
}

// checkCommitOrder: within a project, an item whose answer came before
// another was sent committed before it (one writer per workspace, whose
// audit ids grow in commit order — invariant 1,
// docs/architecture.md#invariant-1-one-writer-per-workspace; a new owner
// restores every acknowledged row), so the feed must show it first.
func checkCommitOrder(v *feedVerdict, items []feedItem, pos map[string]int) {
	per := map[string][]feedItem{}
	for _, it := range items {
		if _, ok := pos[it.key]; ok {
			per[it.project] = append(per[it.project], it)
		}
	}
	for project, its := range per {
		byDone := slices.Clone(its)
		slices.SortFunc(byDone, func(a, b feedItem) int { return a.done.Compare(b.done) })
		// prefix[i]: the item with the latest feed position among byDone[:i+1].
		prefix := make([]int, len(byDone))
		for i, it := range byDone {
			prefix[i] = i
			if i > 0 && pos[byDone[prefix[i-1]].key] > pos[it.key] {
				prefix[i] = prefix[i-1]
			}
		}
		for _, it := range its {
			// the items answered before it was sent
			n, _ := slices.BinarySearchFunc(byDone, it.sent, func(a feedItem, t time.Time) int {
				return a.done.Compare(t) // n: the first answered at or after the sending
			})
			if n == 0 {
				continue
			}
			if before := byDone[prefix[n-1]]; pos[before.key] > pos[it.key] {
				v.problem(&v.disorder, "%s: %s erhalten vor %s, das bestätigt war, bevor es gesendet wurde", project, it.key, before.key)
			}
		}
	}
}

// latestReader answers an entry's latest version at the end of the run.
type latestReader interface {
	get(ctx context.Context, project, slug string, version int) (content string, v, latest int, found bool, err error)
}

// checkPhantoms reads the latest version of every entry the feeds showed a
// version of and counts, per verdict, versions above it: the feed showed a
// write the cluster does not hold (it must show only acknowledged writes,
// docs/changes.md#how-it-works).
func checkPhantoms(ctx context.Context, r latestReader, feeds [][]feedChange, vs []*feedVerdict, workers int) {
	top := map[slugRef]int{}
	for _, got := range feeds {
		for _, ch := range got {
			if ch.Version > 0 {
				r := slugRef{ch.Project, ch.Slug}
				top[r] = max(top[r], ch.Version)
			}
		}
	}
	latest := map[slugRef]int{}
	var mu sync.Mutex
	refs := make(chan slugRef)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ref := range refs {
				_, _, l, found, err := r.get(ctx, ref.project, ref.slug, 0)
				mu.Lock()
				switch {
				case err != nil:
					latest[ref] = -1
				case found:
					latest[ref] = l
				}
				mu.Unlock()
			}
		})
	}
	for ref := range top {
		refs <- ref
	}
	close(refs)
	wg.Wait()
	for i, got := range feeds {
		v := vs[i]
		for _, ch := range got {
			if ch.Version == 0 {
				continue
			}
			switch l := latest[slugRef{ch.Project, ch.Slug}]; {
			case l < 0:
				v.problem(&v.phantom, "%s: %s %s nicht lesbar", v.name, ch.Project, ch.Slug)
			case ch.Version > l:
				v.problem(&v.phantom, "%s: %s %s v%d im Feed, der Cluster hat nur bis v%d", v.name, ch.Project, ch.Slug, ch.Version, l)
			}
		}
	}
}
