// Package rank orders a recall's matches over one project's index or
// several scored as one: the query's words as written first, then compound
// parts and joins, then corrections of typos (tiers.go), each known against
// the searched projects' own vocabulary (vocab.go); scores made comparable
// across projects of different sizes (scale.go); and the common tier
// computed exactly without bleve's searcher tree (topk.go). It reads bleve
// indexes and the analyzed query (package text); it neither opens indexes
// nor reads entries.
package rank
