package vector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"munin/internal/memory"
)

// The meaning path of a recall: the query is embedded by the same model that
// embedded the entries, and each searched project's vectors are compared with
// it by cosine similarity (index.go). Its hits are fused with the keyword hits
// by package search (fuse.go). Vectors are made off the request path (package
// embed) and may lag behind the writes; keyword recall keeps read-your-writes.

// Source is where a project's vectors come from: the store.
type Source interface {
	// Vectors returns the vectors by model of the latest live versions of
	// the project's entries.
	Vectors(ctx context.Context, ref memory.ProjectRef, model string) ([]memory.Vector, error)
}

// QueryEmbedder turns a query into a vector; embed.Client implements it.
type QueryEmbedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model, as the stored vectors do.
	Model() string
}

// Defaults of Options.
const (
	// DefaultMeaningWait bounds the meaning part of one recall: a slow
	// endpoint costs a recall at most this, then it answers by words.
	DefaultMeaningWait = 2 * time.Second
	// DefaultQueryCache is how many query vectors are kept: agents repeat
	// their queries, and an embedding call costs more than the search.
	DefaultQueryCache = 256
	// DefaultFuseDepth is how many hits each path contributes to the fusion
	// at least (more when the recall's limit is higher).
	DefaultFuseDepth = 20
	// DefaultRRFK is reciprocal-rank fusion's k (Cormack et al. 2009): the
	// larger, the less the first ranks of one path dominate.
	DefaultRRFK = 60
)

// Options switch the meaning path on and tune it. With Embedder or
// Vectors nil it is off: recall is keyword recall and nothing is called.
type Options struct {
	Embedder QueryEmbedder
	Vectors  Source
	// Wait bounds the query's embedding and the first load of a project's
	// vectors within one recall (default DefaultMeaningWait).
	Wait time.Duration
	// QueryCache is the number of query vectors kept (default DefaultQueryCache).
	QueryCache int
	// FuseDepth is the least number of hits each path gives the fusion
	// (default DefaultFuseDepth; at most memory.MaxRecallLimit).
	FuseDepth int
	// RRFK is the k of reciprocal-rank fusion (default DefaultRRFK).
	RRFK int
	// MinSimilarity: a vector at or below this cosine similarity is no
	// meaning hit (default 0: at least not unrelated).
	MinSimilarity float32
	// NearMin is the least cosine similarity of a duplicate hint by meaning
	// (Near); 0 leaves that hint off.
	NearMin float32
	// OnFailure, when set, is told each time the meaning path fails in a
	// recall (embedding, loading vectors, a wrong dimension) and the recall
	// answers by words alone for it.
	OnFailure func()
}

func (o Options) withDefaults() Options {
	if o.Wait <= 0 {
		o.Wait = DefaultMeaningWait
	}
	if o.QueryCache <= 0 {
		o.QueryCache = DefaultQueryCache
	}
	if o.FuseDepth <= 0 {
		o.FuseDepth = DefaultFuseDepth
	}
	o.FuseDepth = min(o.FuseDepth, memory.MaxRecallLimit)
	if o.RRFK <= 0 {
		o.RRFK = DefaultRRFK
	}
	return o
}

// Meaning is the meaning path of a search registry: the query cache and
// one vector index per project, loaded from the Source on first use and
// dropped when idle.
type Meaning struct {
	opts  Options
	model string
	log   *slog.Logger
	base  context.Context // the registry's: loads outlive the recall that started them
	cache *lru.Cache[string, []float32]

	mu       sync.Mutex
	projects map[memory.ProjectRef]*vecProject

	failures     atomic.Int64
	logSometimes rate.Sometimes
	// nearPausedUntil is when Near calls the endpoint again after one of
	// its calls was too slow (unix nanoseconds; near.go).
	nearPausedUntil atomic.Int64
}

// New returns the meaning path, or nil when opts leave it off. base is the
// context of vector loads: they outlive the recall that started them, and
// end with it.
func New(base context.Context, opts Options, log *slog.Logger) *Meaning {
	if opts.Embedder == nil || opts.Vectors == nil {
		return nil
	}
	opts = opts.withDefaults()
	cache, err := lru.New[string, []float32](opts.QueryCache)
	if err != nil {
		panic("search/vector: query cache: " + err.Error()) // only for a size ≤ 0, excluded above
	}
	return &Meaning{
		opts: opts, model: opts.Embedder.Model(), log: log, base: base, cache: cache,
		projects:     make(map[memory.ProjectRef]*vecProject),
		logSometimes: rate.Sometimes{First: 3, Interval: time.Minute},
	}
}

// vecProject is one project's vector index and the state of its load.
type vecProject struct {
	// lastUse is when a recall last used the vectors (unix nanoseconds);
	// unused for the registry's idle time, they are dropped (UnloadIdle).
	lastUse atomic.Int64
	mu      sync.Mutex
	idx     *Index          // nil until loaded
	loading chan struct{}   // closed when the current load ends; nil when none runs
	err     error           // of the last load, for its waiters
	pending []memory.Vector // stored while the load ran, applied after it
}

// OnStored adds freshly stored vectors to the indexes of their projects; the
// embedding worker calls it after each batch it stored. A project whose
// vectors were not loaded yet ignores them: its load reads them from the
// store. Vectors of another model, or of another dimension than their
// project's, are ignored (and logged).
func (m *Meaning) OnStored(vs []memory.Vector) {
	byProject := map[memory.ProjectRef][]memory.Vector{}
	for _, v := range vs {
		if v.Model == m.model {
			byProject[v.Project] = append(byProject[v.Project], v)
		}
	}
	for ref, vs := range byProject {
		m.mu.Lock()
		p := m.projects[ref]
		m.mu.Unlock()
		if p == nil {
			continue
		}
		p.mu.Lock()
		switch {
		case p.idx != nil:
			m.add(ref, p.idx, vs)
		case p.loading != nil:
			p.pending = append(p.pending, vs...)
		}
		p.mu.Unlock()
	}
}

// add puts vs into idx and logs those refused.
func (m *Meaning) add(ref memory.ProjectRef, idx *Index, vs []memory.Vector) {
	refused := 0
	for _, v := range vs {
		if !idx.Upsert(v.Slug, v.Version, v.Values) {
			refused++
		}
	}
	if refused > 0 {
		m.log.Warn("vectors ignored: wrong dimension, zero or not finite", "project", ref.String(),
			"model", m.model, "ignored", refused, "of", len(vs))
	}
}

// project returns ref's vector state, creating it if new.
func (m *Meaning) project(ref memory.ProjectRef) *vecProject {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.projects[ref]
	if p == nil {
		p = &vecProject{}
		m.projects[ref] = p
	}
	return p
}

// start begins loading p's vectors unless they are loaded or loading, and
// returns the index or the channel that closes when the load ends.
func (m *Meaning) start(ref memory.ProjectRef, p *vecProject) (*Index, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx != nil {
		return p.idx, nil
	}
	if p.loading == nil {
		p.loading = make(chan struct{})
		go m.load(ref, p, p.loading)
	}
	return nil, p.loading
}

// load reads ref's vectors from the store into a new index, then applies
// the vectors stored meanwhile. A failed load leaves the project unloaded,
// so the next recall tries again.
func (m *Meaning) load(ref memory.ProjectRef, p *vecProject, done chan struct{}) {
	defer close(done)
	vs, err := m.opts.Vectors.Vectors(m.base, ref, m.model)
	var idx *Index
	if err == nil {
		idx = NewIndex()
		idx.dim = CommonDim(vs)
		m.add(ref, idx, vs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loading, p.err = nil, err
	if err != nil {
		p.pending = nil
		return
	}
	m.add(ref, idx, p.pending)
	p.idx, p.pending = idx, nil
}

// UnloadIdle drops the vectors of every project no recall used since
// cutoff, as idle keyword indexes are closed: the next recall loads them
// from the store again, vectors stored meanwhile included. A recall still
// holding the dropped index finishes with it. It returns how many it
// dropped.
func (m *Meaning) UnloadIdle(cutoff int64) int {
	m.mu.Lock()
	ps := make([]*vecProject, 0, len(m.projects))
	for _, p := range m.projects {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	n := 0
	for _, p := range ps {
		if p.lastUse.Load() >= cutoff {
			continue
		}
		p.mu.Lock()
		if p.idx != nil && p.loading == nil {
			p.idx = nil
			n++
		}
		p.mu.Unlock()
	}
	return n
}

// CommonDim is the dimension most of vs have (the larger one of a tie), or
// 0 for none: the project's dimension, whatever order the vectors come in.
// A stray vector of another one (an endpoint that answered garbage once) is
// then refused, not taken as the dimension of all the others.
func CommonDim(vs []memory.Vector) int {
	count := map[int]int{}
	best := 0
	for _, v := range vs {
		d := len(v.Values)
		count[d]++
		if count[d] > count[best] || (count[d] == count[best] && d > best) {
			best = d
		}
	}
	return best
}

// Index returns ref's vector index, loading it first if needed; it waits at
// most until ctx ends.
func (m *Meaning) Index(ctx context.Context, ref memory.ProjectRef) (*Index, error) {
	p := m.project(ref)
	p.lastUse.Store(time.Now().UnixNano())
	idx, loading := m.start(ref, p)
	if idx != nil {
		return idx, nil
	}
	// A load that is over counts even when ctx ended too (select would
	// pick either at random).
	select {
	case <-loading:
	default:
		select {
		case <-loading:
		case <-ctx.Done():
			return nil, fmt.Errorf("load vectors of %s: %w", ref, ctx.Err())
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx == nil {
		return nil, fmt.Errorf("load vectors of %s: %w", ref, cmp.Or(p.err, errors.New("load did not finish")))
	}
	return p.idx, nil
}

// embed returns the query's unit vector, from the cache if it was asked before.
func (m *Meaning) embed(ctx context.Context, text string) ([]float32, error) {
	if q, ok := m.cache.Get(text); ok {
		return q, nil
	}
	q, err := m.embedOnce(ctx, text)
	if err != nil {
		return nil, err
	}
	m.cache.Add(text, q)
	return q, nil
}

// embedOnce asks the endpoint for text's unit vector.
func (m *Meaning) embedOnce(ctx context.Context, text string) ([]float32, error) {
	out, err := m.opts.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("embed query: %d vectors for 1 text", len(out))
	}
	q, ok := Normalized(out[0])
	if !ok {
		return nil, errors.New("embed query: empty, zero or not finite vector")
	}
	return q, nil
}

// Hit is a vector found for a query in one project.
type Hit struct {
	Ref memory.ProjectRef
	Near
}

// Search returns the depth vectors most similar to the query in all of refs,
// most similar first. It fails only if the query cannot be embedded; a
// project whose vectors cannot be loaded, or have another dimension than
// the query, adds nothing and is reported as a failure.
func (m *Meaning) Search(ctx context.Context, refs []memory.ProjectRef, text string, depth int) ([]Hit, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Wait)
	defer cancel()
	for _, ref := range refs {
		m.start(ref, m.project(ref)) // loads overlap the embedding
	}
	q, err := m.embed(ctx, text)
	if err != nil {
		return nil, err
	}
	return m.nearest(ctx, refs, q, depth), nil
}

// nearest returns the depth vectors most similar to the unit vector q in all
// of refs, most similar first (Search without the embedding).
func (m *Meaning) nearest(ctx context.Context, refs []memory.ProjectRef, q []float32, depth int) []Hit {
	var out []Hit
	for _, ref := range refs {
		idx, err := m.Index(ctx, ref)
		if err != nil {
			m.Fail("meaning search skips a project", err, "project", ref.String())
			continue
		}
		found, ok := idx.TopK(q, depth, m.opts.MinSimilarity)
		if !ok {
			m.Fail("meaning search skips a project", errors.New("query vector has another dimension than the stored ones"),
				"project", ref.String(), "query_dim", len(q))
			continue
		}
		for _, n := range found {
			out = append(out, Hit{Ref: ref, Near: n})
		}
	}
	// Similarities of one model compare across projects; equal ones keep
	// the order of refs.
	slices.SortStableFunc(out, func(a, b Hit) int { return cmp.Compare(b.Sim, a.Sim) })
	return out[:min(len(out), depth)]
}

// Forget drops a vector the store no longer backs (forgotten or gone).
func (m *Meaning) Forget(h Hit) {
	m.mu.Lock()
	p := m.projects[h.Ref]
	m.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	idx := p.idx
	p.mu.Unlock()
	if idx != nil {
		idx.Remove(h.Slug, h.Version)
	}
}

// Fail counts a failure of the meaning path and logs it: the first ones,
// then one a minute with the count meanwhile, so an endpoint that is down
// for an hour does not write a line per recall.
func (m *Meaning) Fail(msg string, err error, args ...any) {
	n := m.failures.Add(1)
	if m.opts.OnFailure != nil {
		m.opts.OnFailure()
	}
	m.logSometimes.Do(func() {
		m.log.Warn(msg, append(args, "model", m.model, "err", err, "failures_so_far", n)...)
	})
}

// FuseDepth is the least number of hits each path gives the fusion
// (Options.FuseDepth with its default).
func (m *Meaning) FuseDepth() int { return m.opts.FuseDepth }

// RRFK is the k of reciprocal-rank fusion (Options.RRFK with its default).
func (m *Meaning) RRFK() int { return m.opts.RRFK }
