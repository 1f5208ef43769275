package portable

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/store"
)

// ReindexResult is the check of one project's index.
type ReindexResult struct {
	Ref memory.ProjectRef
	// Live is the number of live entries counted before the build; Scanned
	// the entries the build read (one snapshot); Docs the documents in the
	// built index. Docs must equal Scanned; Live differs only if the project
	// was written meanwhile.
	Live, Scanned, Docs int
	// Probe is the query run against the built index and Hits its result
	// count ("" when the project has no live entry).
	Probe string
	Hits  int
	// Duration is the time the build took.
	Duration time.Duration
}

// countingSource is the store as the search index sees it, counting what a
// build scans and keeping the first entry as the probe of the check.
type countingSource struct {
	*store.Store
	scanned atomic.Int64
	onScan  func(memory.Version)
}

func (c *countingSource) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	return c.Store.ScanLatestSeq(ctx, ref, func(v memory.Version) error {
		c.scanned.Add(1)
		c.onScan(v)
		return fn(v)
	})
}

// Reindex rebuilds the on-disk search index of each project in refs (every
// project when refs is empty) under dataDir from the database, exactly as the
// server does when an index is missing or broken, with progress per project
// on w. It checks that the index holds one document per live entry and
// answers a search for the first entry's title. No server may run on the
// data directory meanwhile (the caller holds its lock): the server keeps its
// indexes open.
func Reindex(ctx context.Context, st *store.Store, dataDir string, refs []memory.ProjectRef, w io.Writer) ([]ReindexResult, error) {
	refs, err := orAllProjects(ctx, st, refs)
	if err != nil {
		return nil, err
	}
	var out []ReindexResult
	for _, ref := range refs {
		r, err := reindexOne(ctx, st, dataDir, ref, w)
		if err != nil {
			return out, fmt.Errorf("reindex %s: %w", ref, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func reindexOne(ctx context.Context, st *store.Store, dataDir string, ref memory.ProjectRef, w io.Writer) (ReindexResult, error) {
	res := ReindexResult{Ref: ref}
	live, _, err := st.EntryStats(ctx, ref)
	if err != nil {
		return res, err
	}
	res.Live = live
	bar := newProgress(w, ref.String(), "entries", live)
	var first *memory.Version
	src := &countingSource{Store: st, onScan: func(v memory.Version) {
		if first == nil {
			first = &v
		}
		bar.add(1)
	}}
	reg := search.NewRegistry(src, search.Options{Dir: search.IndexRoot(dataDir), Logger: slog.New(slog.DiscardHandler)})
	defer reg.Close()

	start := time.Now()
	res.Docs, err = reg.Rebuild(ctx, ref)
	if err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	bar.finish()
	res.Scanned = int(src.scanned.Load())
	if res.Docs != res.Scanned {
		return res, fmt.Errorf("index holds %d documents for %d live entries", res.Docs, res.Scanned)
	}
	if first != nil {
		res.Probe = probeText(*first)
		hits, err := reg.Search(ctx, ref, memory.SearchQuery{Text: res.Probe, Limit: search.MaxLimit})
		if err != nil {
			return res, err
		}
		res.Hits = len(hits)
		if !hasSlug(hits, first.Slug) {
			return res, fmt.Errorf("a search for %q does not find %s", res.Probe, first.Slug)
		}
	}
	return res, nil
}

// probeText is a query that must find v: its title and slug words.
func probeText(v memory.Version) string {
	return strings.TrimSpace(v.Title + " " + strings.NewReplacer("/", " ", "-", " ", "_", " ", ".", " ").Replace(v.Slug))
}

func hasSlug(hits []memory.Hit, slug string) bool {
	for _, h := range hits {
		if h.Slug == slug {
			return true
		}
	}
	return false
}

// orAllProjects is refs, or every project of st when refs is empty.
func orAllProjects(ctx context.Context, st *store.Store, refs []memory.ProjectRef) ([]memory.ProjectRef, error) {
	if len(refs) > 0 {
		return refs, nil
	}
	ps, err := st.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		refs = append(refs, p.Ref)
	}
	return refs, nil
}
