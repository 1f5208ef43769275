package search

import (
	"munin/internal/memory"
	"munin/internal/search/vector"
)

// The meaning path lives in package vector; these names keep the registry's
// options where its callers look for them.
type (
	// MeaningOptions switch the meaning path of SearchProjects on and tune
	// it (vector.Options); the zero value leaves it off.
	MeaningOptions = vector.Options
	// QueryEmbedder turns a query into a vector; embed.Client implements it.
	QueryEmbedder = vector.QueryEmbedder
	// VectorSource is where a project's vectors come from: the store.
	VectorSource = vector.Source
)

// OnStored adds freshly stored vectors to the indexes of their projects; the
// embedding worker calls it after each batch it stored (see
// vector.Meaning.OnStored). Without the meaning path it does nothing.
func (r *Registry) OnStored(vs []memory.Vector) {
	if r.meaning != nil {
		r.meaning.OnStored(vs)
	}
}

// Defaults of MeaningOptions (see package vector).
const (
	DefaultMeaningWait = vector.DefaultMeaningWait
	DefaultQueryCache  = vector.DefaultQueryCache
	DefaultFuseDepth   = vector.DefaultFuseDepth
	DefaultRRFK        = vector.DefaultRRFK
)
