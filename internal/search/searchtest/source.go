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
// (LatestMany), and one version (Get).
type Source struct {
	mu      sync.Mutex
	seq     int64
	data    map[memory.ProjectRef]map[string][]memory.Version
	changed map[memory.ProjectRef]map[string]int64
}

// NewSource returns an empty Source.
func NewSource() *Source {
	return &Source{data: map[memory.ProjectRef]map[string][]memory.Version{}, changed: map[memory.ProjectRef]map[string]int64{}}
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
	if s.data[ref] == nil {
		s.data[ref], s.changed[ref] = map[string][]memory.Version{}, map[string]int64{}
	}
	v.Version = len(s.data[ref][v.Slug]) + 1
	v.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, v.Version*1000, time.UTC)
	v.Agent = "test"
	s.data[ref][v.Slug] = append(s.data[ref][v.Slug], v)
	s.seq++
	s.changed[ref][v.Slug] = s.seq
	return v
}

func (s *Source) mark() memory.Mark { return memory.Mark{Seq: s.seq, Stamp: s.seq} }

// ScanLatestSeq calls fn for the latest live version of every entry.
func (s *Source) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	return s.since(ctx, ref, 0, false, fn)
}

// Changes calls fn for the latest version of every slug changed after since.
func (s *Source) Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	unknown := since.Seq > s.seq || since.Stamp != since.Seq
	s.mu.Unlock()
	if unknown {
		return memory.Mark{}, memory.ErrUnknownMark
	}
	return s.since(ctx, ref, since.Seq, true, fn)
}

func (s *Source) since(ctx context.Context, ref memory.ProjectRef, seq int64, tombstones bool, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	var vs []memory.Version
	for slug, at := range s.changed[ref] {
		versions := s.data[ref][slug]
		if v := versions[len(versions)-1]; at > seq && (tombstones || !v.Deleted) {
			vs = append(vs, v)
		}
	}
	mark := s.mark()
	s.mu.Unlock()
	for _, v := range vs {
		if err := ctx.Err(); err != nil {
			return memory.Mark{}, err
		}
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return mark, nil
}

// Latest returns the latest version of slug, tombstones included.
func (s *Source) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.data[ref][slug]
	if len(vs) == 0 {
		return memory.Version{}, memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	}
	return vs[len(vs)-1], nil
}

// LatestMany is Latest for several slugs; slugs that never existed are
// absent from the map, as the store leaves them out.
func (s *Source) LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]memory.Version, len(slugs))
	for _, slug := range slugs {
		if vs := s.data[ref][slug]; len(vs) > 0 {
			out[slug] = vs[len(vs)-1]
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
