package search

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"

	"munin/internal/memory"
)

// conceptEmbedder is a deterministic stand-in for an embedding model: each
// dimension is a concept, and a text's vector counts the words of each
// concept it holds. Texts about the same concept in other words get close
// vectors, as a real model gives them; a text of no known concept gets the
// zero vector. Vectors set by fixed override it for exact texts.
type conceptEmbedder struct {
	mu    sync.Mutex
	fixed map[string][]float32
	err   error // returned by every call when set
	// block, when set, makes Embed wait until the call's context ends.
	block bool
	calls atomic.Int64
	// failing is what Failing reports (embed.Client: the last call failed).
	failing atomic.Bool
}

const testModel = "concept-test"

// concepts are the dimensions of conceptEmbedder, in order.
var concepts = [][]string{
	{"backup", "backups", "nightly", "snapshot", "snapshots", "offsite", "restore", "disk", "dies", "safe", "data", "lose", "sicherung", "festplatte"},
	{"deploy", "release", "releases", "rollout", "ship", "ships", "ausliefern", "auslieferung"},
	{"meeting", "standup", "retro", "besprechung", "sync"},
	{"invoice", "billing", "payment", "customer", "rechnung", "kunde"},
}

func (e *conceptEmbedder) Model() string { return testModel }

func (e *conceptEmbedder) Failing() bool { return e.failing.Load() }

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.mu.Lock()
	err, block := e.err, e.block
	e.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vector(t)
	}
	return out, nil
}

// vector embeds one text.
func (e *conceptEmbedder) vector(text string) []float32 {
	e.mu.Lock()
	v, ok := e.fixed[text]
	e.mu.Unlock()
	if ok {
		return slices.Clone(v)
	}
	out := make([]float32, len(concepts))
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		for d, words := range concepts {
			if slices.Contains(words, w) {
				out[d]++
			}
		}
	}
	return out
}

func (e *conceptEmbedder) set(err error, block bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.err, e.block = err, block
}

func (e *conceptEmbedder) fix(text string, v ...float32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fixed == nil {
		e.fixed = map[string][]float32{}
	}
	e.fixed[text] = v
}

// fakeVectors is the store's side of the vectors: what Vectors returns.
type fakeVectors struct {
	mu   sync.Mutex
	data map[memory.ProjectRef]map[string]memory.Vector
	err  error
	// hook, when set, runs inside Vectors before it reads (a load in progress).
	hook  func(ref memory.ProjectRef)
	loads atomic.Int64
}

func (f *fakeVectors) Vectors(ctx context.Context, ref memory.ProjectRef, model string) ([]memory.Vector, error) {
	f.loads.Add(1)
	f.mu.Lock()
	hook, err := f.hook, f.err
	f.mu.Unlock()
	if hook != nil {
		hook(ref)
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []memory.Vector
	for _, v := range f.data[ref] {
		if v.Model == model {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeVectors) store(v memory.Vector) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data == nil {
		f.data = map[memory.ProjectRef]map[string]memory.Vector{}
	}
	if f.data[v.Project] == nil {
		f.data[v.Project] = map[string]memory.Vector{}
	}
	f.data[v.Project][v.Slug] = v
}

// meaningRig is a registry with the meaning path on, its source, vectors and
// embedder, and a count of the failures it reported.
type meaningRig struct {
	src      *fakeSource
	vecs     *fakeVectors
	emb      *conceptEmbedder
	r        *Registry
	failures atomic.Int64
}

func newMeaningRig(t testing.TB, opts MeaningOptions) *meaningRig {
	t.Helper()
	return newMeaningRigWith(t, opts, Options{})
}

// newMeaningRigWith is newMeaningRig with the registry's other options.
func newMeaningRigWith(t testing.TB, opts MeaningOptions, base Options) *meaningRig {
	t.Helper()
	g := &meaningRig{src: newFakeSource(), vecs: &fakeVectors{}, emb: &conceptEmbedder{}}
	opts.Embedder, opts.Vectors = g.emb, g.vecs
	opts.OnFailure = func() { g.failures.Add(1) }
	base.Meaning, base.Logger = opts, slog.New(slog.DiscardHandler)
	g.r = newTestRegistry(t, g.src, base)
	return g
}

// put writes an entry and stores the vector of its text, as the embedding
// worker would once it caught up: the index hears of it through OnStored.
func (g *meaningRig) put(t testing.TB, ref memory.ProjectRef, slug, title, content string, tags ...string) memory.Version {
	t.Helper()
	v := g.src.Put(ref, slug, title, content, tags...)
	refresh(t, g.r, ref, slug)
	vec := memory.Vector{Project: ref, Slug: slug, Version: v.Version, Model: testModel,
		Values: g.emb.vector(title + "\n" + strings.Join(tags, " ") + "\n" + content)}
	g.vecs.store(vec)
	g.r.OnStored([]memory.Vector{vec})
	return v
}

// putVec is put with a chosen vector.
func (g *meaningRig) putVec(t testing.TB, ref memory.ProjectRef, slug, content string, vec ...float32) {
	t.Helper()
	v := g.src.Put(ref, slug, slug, content)
	refresh(t, g.r, ref, slug)
	mv := memory.Vector{Project: ref, Slug: slug, Version: v.Version, Model: testModel, Values: vec}
	g.vecs.store(mv)
	g.r.OnStored([]memory.Vector{mv})
}

func (g *meaningRig) recall(t testing.TB, refs []memory.ProjectRef, text string, tags ...string) []memory.Hit {
	t.Helper()
	return searchAll(t, g.r, refs, memory.SearchQuery{Text: text, Tags: tags})
}

// matches renders hits as slug:match, in order.
func matches(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Slug + ":" + h.Match
	}
	return out
}

var errEndpoint = errors.New("endpoint answered 500")
