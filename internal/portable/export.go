package portable

import (
	"context"
	"fmt"
	"io"

	"munin/internal/memory"
	"munin/internal/store"
)

// Export writes every version of every entry of a project, tombstones
// included, to w as JSON Lines ordered by slug and version, and returns how
// many it wrote. There is no header line: every line is one version, so
// files can be concatenated, split and filtered line by line (grep, jq).
// The versions come from one read snapshot, so an export taken while the
// server writes is consistent.
func Export(ctx context.Context, st *store.Store, ref memory.ProjectRef, w io.Writer) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	enc := newEncoder(w)
	n := 0
	err := st.ScanVersions(ctx, ref, func(v memory.Version) error {
		n++
		return enc.write(v)
	})
	if ferr := enc.flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return n, fmt.Errorf("export %s: %w", ref, err)
	}
	return n, nil
}
