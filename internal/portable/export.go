package portable

import (
	"context"
	"fmt"
	"io"

	"munin/internal/memory"
	"munin/internal/store"
)

// ExportResult counts what Export wrote.
type ExportResult struct {
	Versions, Proposals int
}

// Export writes every version of every entry of a project, tombstones
// included, to w as JSON Lines ordered by slug and version, then every
// proposal of the project (pending, approved and rejected; ProposalLine)
// oldest first. There is no header line: every line is one version or one
// proposal, so files can be concatenated, split and filtered line by line
// (grep, jq). Everything comes from one read snapshot, so an export taken
// while the server writes is consistent.
func Export(ctx context.Context, st *store.Store, ref memory.ProjectRef, w io.Writer) (ExportResult, error) {
	var res ExportResult
	if err := ref.Validate(); err != nil {
		return res, err
	}
	enc := newEncoder(w)
	err := st.ScanExport(ctx, ref, func(v memory.Version) error {
		res.Versions++
		return enc.write(v)
	}, func(p memory.Proposal) error {
		res.Proposals++
		return enc.writeProposal(p)
	})
	if ferr := enc.flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return res, fmt.Errorf("export %s: %w", ref, err)
	}
	return res, nil
}
