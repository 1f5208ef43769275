package service

import (
	"strconv"
	"strings"

	"munin/internal/memory"
)

// A proposal's id as clients see it: "<workspace>.<project>.<n>", n being
// its row in the workspace file. Names hold no dots, so the id names its
// project without a second argument, and a caller without a key for that
// project gets the same not_found as for an id that does not exist
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).

// ProposalID renders the id of proposal n of ref.
func ProposalID(ref memory.ProjectRef, n int64) string {
	return ref.Workspace + "." + ref.Project + "." + strconv.FormatInt(n, 10)
}

// ParseProposalID reads an id made by ProposalID; anything else is not_found.
func ParseProposalID(id string) (memory.ProjectRef, int64, error) {
	parts := strings.Split(id, ".")
	if len(parts) == 3 {
		ref := memory.ProjectRef{Workspace: parts[0], Project: parts[1]}
		n, err := strconv.ParseInt(parts[2], 10, 64)
		if err == nil && n > 0 && ref.Validate() == nil {
			return ref, n, nil
		}
	}
	return memory.ProjectRef{}, 0, memory.Errorf(memory.CodeNotFound, "proposal %q not found", id)
}
