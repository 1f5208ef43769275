package search

import (
	"context"
	"sort"

	"munin/internal/memory"
)

// SearchProjects is a stand-in until the merged ranking lands: it searches
// each project and sorts the hits by their per-project scores.
func (r *Registry) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	var all []memory.Hit
	for _, ref := range refs {
		hits, err := r.Search(ctx, ref, q)
		if err != nil {
			return nil, err
		}
		for i := range hits {
			hits[i].Project = ref
		}
		all = append(all, hits...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Score > all[j].Score })
	if q.Limit > 0 && len(all) > q.Limit {
		all = all[:q.Limit]
	}
	return all, nil
}
