// Package search is Munin's full-text index: a Registry with one bleve
// (scorch) index on disk per project, opened on the project's first Search
// and caught up with the database (Source) from the change it records, or
// built from the database when there is none or it cannot be trusted
// (disk.go); kept in step by Refresh, which always rereads the database
// instead of trusting its caller; closed when idle (idle.go).
//
// Each word is indexed with its English (porter) and German (snowball) stem
// so that word forms of both languages find each other; titles and tags weigh
// more than content. The index holds no text: hits are read from the Source. Hits carry a plain-text snippet of the content with
// matched words marked «like this» (see snippet.go for the exact shape).
// SearchProjects recalls over several projects at once, scored as if one
// index held them all (see scale.go). With Options.Meaning on, it also
// searches by meaning, comparing the query's embedding with each entry's
// (meaning.go), and fuses both ranked lists (fuse.go).
package search
