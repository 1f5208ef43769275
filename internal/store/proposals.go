package store

import (
	"database/sql"
	"time"

	"munin/internal/memory"
)

// applyProposal turns w into a proposal when the project reviews it
// (proposed set). Stage 11 work in progress: never proposes yet.
func applyProposal(tx *sql.Tx, project string, w memory.Write, tags string, now time.Time) (memory.WriteResult, bool, error) {
	return memory.WriteResult{}, false, nil
}
