// Package portable moves Munin's data in and out of a data directory: online
// backups of every file (store.Backup with a printed report), export of a
// project's full history — every version, then every proposal — as JSON
// Lines and its idempotent import, and the check-and-rebuild of the search
// indexes that `munin reindex` runs. main.go parses the flags; everything
// else happens here.
package portable

import (
	"strings"

	"munin/internal/memory"
)

// ParseRef parses "workspace/project" as the commands take it.
func ParseRef(s string) (memory.ProjectRef, error) {
	w, p, ok := strings.Cut(s, "/")
	if !ok {
		return memory.ProjectRef{}, memory.Errorf(memory.CodeInvalid, "%q must be WORKSPACE/PROJECT", s)
	}
	ref := memory.ProjectRef{Workspace: w, Project: p}
	return ref, ref.Validate()
}
