package vector

import (
	"math"
	"slices"
	"sync"
)

// Index is one project's vectors for one model, searched by exact cosine
// similarity: every query is compared with every vector. Rows are normalized
// once when they are added, so a similarity is one dot product. The rows sit
// in one flat slice (n × dim float32), which the scan reads front to back.
//
// Exact search is measured fast enough for a project of 100,000 entries
// (BenchmarkVecIndexTopK, AUSBAUSTUFEN.md); an approximate index would add a
// dependency, a build and recall below 100 % for no need at this size.
//
// It holds the newest version of each slug it was given; a slug found
// forgotten or replaced at read time is dropped by the caller (remove).
type Index struct {
	mu       sync.RWMutex
	dim      int       // set by the first vector, unless set before (see CommonDim)
	data     []float32 // row i is data[i*dim : (i+1)*dim], unit length
	slugs    []string
	versions []int
	pos      map[string]int // slug → row
}

// NewIndex returns an empty index; its dimension is set by the first vector.
func NewIndex() *Index { return &Index{pos: make(map[string]int)} }

// Upsert adds or replaces the vector of slug, unless the index holds a newer
// version of it. It refuses (returns false) a vector of another dimension
// than the index's, and one with a non-finite or zero length.
func (x *Index) Upsert(slug string, version int, values []float32) bool {
	unit, ok := Normalized(values)
	if !ok {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dim == 0 {
		x.dim = len(unit)
	}
	if len(unit) != x.dim {
		return false
	}
	if i, ok := x.pos[slug]; ok {
		if x.versions[i] > version {
			return true // an older vector arrived late: the newer one stays
		}
		copy(x.data[i*x.dim:], unit)
		x.versions[i] = version
		return true
	}
	x.pos[slug] = len(x.slugs)
	x.slugs = append(x.slugs, slug)
	x.versions = append(x.versions, version)
	x.data = append(x.data, unit...)
	return true
}

// Remove drops slug's vector if it is not newer than version: the last row
// takes its place.
func (x *Index) Remove(slug string, version int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i, ok := x.pos[slug]
	if !ok || x.versions[i] > version {
		return
	}
	last := len(x.slugs) - 1
	if i != last {
		copy(x.data[i*x.dim:(i+1)*x.dim], x.data[last*x.dim:])
		x.slugs[i], x.versions[i] = x.slugs[last], x.versions[last]
		x.pos[x.slugs[i]] = i
	}
	x.data = x.data[:last*x.dim]
	x.slugs, x.versions = x.slugs[:last], x.versions[:last]
	delete(x.pos, slug)
}

// Size is the number of vectors held.
func (x *Index) Size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.slugs)
}

// Near is one vector found for a query.
type Near struct {
	Slug    string
	Version int
	Sim     float32
}

// TopK returns the k rows most similar to the unit vector q with a
// similarity above floor, most similar first (ties by slug). ok is false if
// q has another dimension than the index's vectors.
func (x *Index) TopK(q []float32, k int, floor float32) (out []Near, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.slugs) == 0 || k <= 0 {
		return nil, true
	}
	if len(q) != x.dim {
		return nil, false
	}
	// best is kept sorted, worst last; k is small (at most memory.MaxRecallLimit), so
	// an insertion costs less than a heap's bookkeeping on this path,
	// where almost every row falls below the worst kept and costs one compare.
	best := make([]Near, 0, k+1)
	dim := x.dim
	for i := range x.slugs {
		s := dot(q, x.data[i*dim:(i+1)*dim])
		if s <= floor || (len(best) == k && !better(s, x.slugs[i], best[k-1])) {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, Near{Slug: x.slugs[i], Sim: s}, func(a, t Near) int {
			if better(a.Sim, a.Slug, t) {
				return -1
			}
			return 1 // slugs are distinct: never equal
		})
		best = slices.Insert(best, at, Near{Slug: x.slugs[i], Version: x.versions[i], Sim: s})
		if len(best) > k {
			best = best[:k]
		}
	}
	return best, true
}

// better tells whether similarity s of slug ranks before n.
func better(s float32, slug string, n Near) bool {
	return s > n.Sim || (s == n.Sim && slug < n.Slug)
}

// dot is the dot product of two slices of the same length. Four
// accumulators let the CPU overlap the additions (a single sum is one long
// dependency chain); the Go compiler does not vectorize this loop.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Normalized returns values scaled to unit length, in a new slice, or false
// for an empty vector, a zero vector or one holding NaN or infinity.
func Normalized(values []float32) ([]float32, bool) {
	if len(values) == 0 {
		return nil, false
	}
	var sum float64
	for _, v := range values {
		sum += float64(v) * float64(v)
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, false
	}
	out := make([]float32, len(values))
	for i, v := range values {
		out[i] = float32(float64(v) / norm)
	}
	return out, true
}
