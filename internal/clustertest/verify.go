//go:build cluster

// The verdict on the acknowledged writes, from two sides: through the REST
// API of the nodes (every version 1..n of every written entry read back,
// the history page compared) and from each workspace's replica, restored
// with litestream into a file and read with SQLite.

package clustertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// maxProblems bounds the problems a verdict keeps as examples.
const maxProblems = 20

// verdict is what a check found.
type verdict struct {
	mu       sync.Mutex
	entries  int // entries checked
	versions int // versions read
	acks     int // acks compared
	lost     int // acks missing or with other content
	gaps     int // missing versions below an entry's latest, duplicates, wrong order
	problems []string
}

func (v *verdict) problem(lost, gap bool, format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if lost {
		v.lost++
	}
	if gap {
		v.gaps++
	}
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

func (v *verdict) counted(entries, versions, acks int) {
	v.mu.Lock()
	v.entries += entries
	v.versions += versions
	v.acks += acks
	v.mu.Unlock()
}

// entryReader reads one version (0: the latest) of an entry, answering
// also the latest version number, and the version numbers of its history
// page, newest first. found is false for not_found.
type entryReader interface {
	get(ctx context.Context, project, slug string, version int) (content string, v, latest int, found bool, err error)
	history(ctx context.Context, project, slug string) ([]int, error)
}

// historyPage is the history limit the check asks for (memory.MaxHistoryLimit).
const historyPage = 200

// verifyAPI reads every written entry back through r with workers in
// parallel: each version 1..latest must be there (gapless), each ack's
// version must hold exactly its content, and the history page must list
// latest, latest-1, … without a hole.
func verifyAPI(ctx context.Context, r entryReader, acks []ack, workers int) *verdict {
	v := &verdict{}
	groups := bySlug(acks)
	refs := make(chan slugRef)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ref := range refs {
				verifyEntry(ctx, r, ref, groups[ref], v)
			}
		})
	}
	for ref := range groups {
		refs <- ref
	}
	close(refs)
	wg.Wait()
	return v
}

func verifyEntry(ctx context.Context, r entryReader, ref slugRef, acks []ack, v *verdict) {
	_, _, latest, found, err := r.get(ctx, ref.project, ref.slug, 0)
	if err != nil || !found {
		v.problem(true, false, "%s %s: nicht lesbar (%v), %d Fassungen bestätigt", ref.project, ref.slug, err, len(acks))
		v.mu.Lock()
		v.lost += len(acks) - 1 // the first was counted by problem
		v.mu.Unlock()
		return
	}
	got := map[int]string{}
	for ver := 1; ver <= latest; ver++ {
		content, v2, _, found, err := r.get(ctx, ref.project, ref.slug, ver)
		switch {
		case err != nil:
			v.problem(false, true, "%s %s v%d: %v", ref.project, ref.slug, ver, err)
		case !found || v2 != ver:
			v.problem(false, true, "%s %s v%d fehlt (unter v%d): Lücke", ref.project, ref.slug, ver, latest)
		default:
			got[ver] = content
		}
	}
	// Each ack on its own: one version acknowledged twice with different
	// content (two owners wrote it) is one loss, whichever content stayed.
	for _, a := range acks {
		c, ok := got[a.version]
		switch {
		case a.version > latest:
			v.problem(true, false, "%s %s v%d bestätigt (%s über n%d), neueste Fassung ist v%d", ref.project, ref.slug, a.version, a.agent, a.node, latest)
		case ok && c != a.content:
			v.problem(true, false, "%s %s v%d: gelesen %q, bestätigt war %q", ref.project, ref.slug, a.version, c, a.content)
		}
	}
	read := len(got)
	hist, err := r.history(ctx, ref.project, ref.slug)
	if err != nil {
		v.problem(false, true, "%s %s: history: %v", ref.project, ref.slug, err)
	} else if wantHist := descending(latest, min(latest, historyPage)); !slices.Equal(hist, wantHist) {
		v.problem(false, true, "%s %s: history zeigt %v, erwartet %d Fassungen ab v%d abwärts", ref.project, ref.slug, short(hist), len(wantHist), latest)
	}
	v.counted(1, read, len(acks))
}

// descending is from, from-1, … n numbers.
func descending(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from - i
	}
	return out
}

// short cuts a long list for a message.
func short(v []int) []int {
	if len(v) > 8 {
		return v[:8]
	}
	return v
}

// stored is the content of every version in a workspace file (or a
// restored replica), by entry and version.
type stored map[slugRef]map[int]string

// compareStored checks acks against versions read from files: each ack's
// version must be there with its content, each entry's versions 1..n.
func compareStored(s stored, acks []ack, v *verdict) {
	for ref, vs := range s {
		n := 0
		for ver := range vs {
			n = max(n, ver)
		}
		if len(vs) != n {
			v.problem(false, true, "%s %s: %d Fassungen bis v%d in der Datei: Lücke", ref.project, ref.slug, len(vs), n)
		}
		v.counted(1, len(vs), 0)
	}
	for _, a := range acks {
		c, ok := s[a.ref()][a.version]
		switch {
		case !ok:
			v.problem(true, false, "%s %s v%d (%s über n%d) fehlt in der Datei", a.project, a.slug, a.version, a.agent, a.node)
		case c != a.content:
			v.problem(true, false, "%s %s v%d: in der Datei %q, bestätigt war %q", a.project, a.slug, a.version, c, a.content)
		}
	}
	v.counted(0, 0, len(acks))
}
