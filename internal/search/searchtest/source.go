package searchtest

import (
	"context"
	"sync"
	"time"

	"munin/internal/memory"
)

// Source is a database in memory for the tests of the search packages: it
// keeps every version of every slug per project, numbers changes like a
// workspace file (one sequence for all its projects), and reads what the
// store reads: the latest live versions (ScanLatestSeq), the changes after a
// mark (Changes), one slug's latest version (Latest) or several at once
// (LatestMany), and one version (Get). Hooks let a test delay or alter reads
// at the moment they happen.
type Source struct {
	mu   sync.Mutex
	data map[memory.ProjectRef]map[string][]memory.Version
	// seq is the change sequence (one for all projects, like a workspace's)
	// and changed the sequence of each slug's last write.
	seq     int64
	changed map[memory.ProjectRef]map[string]int64
	// history tells this source's changes from another's with the same
	// sequence numbers (a restored older copy of a database).
	history int64
	// scanHook runs after ScanLatestSeq took its snapshot and before it
	// emits it, like a long read transaction; it may block.
	scanHook func(ctx context.Context, ref memory.ProjectRef) error
	// latestHook runs after a read of a slug's latest version (Latest,
	// LatestMany, Changes) and may block or replace it.
	latestHook func(ref memory.ProjectRef, slug string, v memory.Version, err error) (memory.Version, error)
}

// NewSource returns an empty Source.
func NewSource() *Source {
	return &Source{data: make(map[memory.ProjectRef]map[string][]memory.Version), changed: make(map[memory.ProjectRef]map[string]int64)}
}

// SetHistory makes the source's marks another history's than a source's
// with the same changes: a restored older copy of a database.
func (s *Source) SetHistory(h int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = h
}

// Put appends the next version of slug and returns it.
func (s *Source) Put(ref memory.ProjectRef, slug, title, content string, tags ...string) memory.Version {
	return s.add(ref, memory.Version{Slug: slug, Title: title, Content: content, Tags: tags})
}

// Forget appends a tombstone.
func (s *Source) Forget(ref memory.ProjectRef, slug string) memory.Version {
	return s.add(ref, memory.Version{Slug: slug, Deleted: true})
}

func (s *Source) add(ref memory.ProjectRef, v memory.Version) memory.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.data[ref]
	if p == nil {
		p = make(map[string][]memory.Version)
		s.data[ref] = p
	}
	v.Version = len(p[v.Slug]) + 1
	v.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, v.Version*1000, time.UTC)
	v.Agent = "test"
	p[v.Slug] = append(p[v.Slug], v)
	s.seq++
	if s.changed[ref] == nil {
		s.changed[ref] = make(map[string]int64)
	}
	s.changed[ref][v.Slug] = s.seq
	return v
}

// Touch marks slug changed in every project holding it without a new
// version, as a write the index must read again: the next refresh batch
// reads it (through the latest hook).
func (s *Source) Touch(slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref, slugs := range s.data {
		if _, ok := slugs[slug]; ok {
			s.seq++
			s.changed[ref][slug] = s.seq
		}
	}
}

// Version returns one stored version (1-based).
func (s *Source) Version(ref memory.ProjectRef, slug string, n int) memory.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[ref][slug][n-1]
}

// Slugs lists every slug ever written in ref, forgotten ones included.
func (s *Source) Slugs(ref memory.ProjectRef) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.data[ref]))
	for slug := range s.data[ref] {
		out = append(out, slug)
	}
	return out
}

// SetHooks sets (nil: removes) the scan and latest hooks.
func (s *Source) SetHooks(scan func(context.Context, memory.ProjectRef) error,
	latest func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanHook, s.latestHook = scan, latest
}

// Latest returns the latest version of slug, tombstones included.
func (s *Source) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	s.mu.Lock()
	vs := s.data[ref][slug]
	hook := s.latestHook
	var v memory.Version
	var err error
	if len(vs) == 0 {
		err = memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	} else {
		v = vs[len(vs)-1]
	}
	s.mu.Unlock()
	if hook != nil {
		return hook(ref, slug, v, err)
	}
	return v, err
}

// LatestMany is Latest for several slugs, as the store reads a recall's
// hits: slugs that never existed are absent from the map, and any failed
// read fails the whole call. Each slug passes the latest hook, as in Latest.
func (s *Source) LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error) {
	out := make(map[string]memory.Version, len(slugs))
	for _, slug := range slugs {
		v, err := s.Latest(ctx, ref, slug)
		switch {
		case memory.ErrorCode(err) == memory.CodeNotFound:
		case err != nil:
			return nil, err
		default:
			out[slug] = v
		}
	}
	return out, nil
}

// Get returns one version of slug and the slug's latest version number.
func (s *Source) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.data[ref][slug]
	if version < 1 || version > len(vs) {
		return memory.Version{}, 0, memory.Errorf(memory.CodeNotFound, "version %d of %q not found", version, slug)
	}
	return vs[version-1], len(vs), nil
}

// mark names the change seq; its stamp is derived from it and the history.
func (s *Source) mark(seq int64) memory.Mark {
	if seq == 0 {
		return memory.Mark{}
	}
	return memory.Mark{Seq: seq, Stamp: seq*1000 + s.history}
}

// ScanLatestSeq calls fn for the latest live version of every entry.
func (s *Source) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	var live []memory.Version
	for _, vs := range s.data[ref] {
		if v := vs[len(vs)-1]; !v.Deleted {
			live = append(live, v)
		}
	}
	seq, hook := s.seq, s.scanHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, ref); err != nil {
			return memory.Mark{}, err
		}
	}
	for _, v := range live {
		if err := ctx.Err(); err != nil {
			return memory.Mark{}, err
		}
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return s.mark(seq), nil
}

// Changes calls fn for the latest version of every slug changed after
// since, each through the latest hook, as Latest does: a test can slow down
// or alter the read of one slug. A mark of another history is unknown.
func (s *Source) Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	if since.Seq > s.seq || since != s.mark(since.Seq) {
		s.mu.Unlock()
		return memory.Mark{}, memory.ErrUnknownMark
	}
	var latest []memory.Version
	for slug, at := range s.changed[ref] {
		if at > since.Seq {
			vs := s.data[ref][slug]
			latest = append(latest, vs[len(vs)-1])
		}
	}
	seq, hook := s.seq, s.latestHook
	s.mu.Unlock()
	for _, v := range latest {
		if hook != nil {
			var err error
			if v, err = hook(ref, v.Slug, v, nil); err != nil {
				return memory.Mark{}, err
			}
		}
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return s.mark(seq), nil
}
