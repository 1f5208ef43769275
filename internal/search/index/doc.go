// Package index is one project's bleve (scorch) index on disk and the
// machinery that keeps it in step with the database: opened and verified,
// caught up from the change it records (the mark) or built anew when it
// cannot be trusted, refreshed in rounds (the group commit of the index),
// waited for by every search so that it shows the writes queued before it
// (read-your-writes), and closed when idle. A Project is built from its
// Config alone; the search registry holds one per project and knows nothing
// of its locks. The mapping (the fields and their analysis, package text)
// lives here too: it is what an index on disk was built with.
package index
