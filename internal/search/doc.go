// Package search is Munin's recall: a Registry of project indexes and the
// path a query takes through them. It is a facade over small packages, each
// with one job, layered one way (text at the bottom, search on top):
//
//   - text: analysis (each word with its English and German stem, function
//     words of both languages dropped), a query's distinct terms and checks,
//     snippets with matched words marked «like this»;
//   - index: one project's bleve (scorch) index on disk, derived from the
//     database (Source): opened and caught up from the change it records,
//     or built when it cannot be trusted; refreshed in rounds; waited for by
//     every search (read-your-writes); closed when idle;
//   - rank: the ranking over one or several indexes: tiers (words, then
//     compounds, then typos), scores comparable across projects, and the
//     exact top-k;
//   - vector: the meaning path, vectors per project and their top-k.
//
// The Registry owns one index per project and the meaning path. A recall
// (Search, SearchProjects) checks and analyzes the query (text), waits for
// the projects' indexes (index), ranks (rank), fuses the meaning hits when
// Options.Meaning is on (fuse.go, vector), and reads the hits from the
// Source (hits.go). The index holds no text: hits are read from the Source.
// The application calls TuneProcess once at start.
package search
