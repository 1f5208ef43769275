package portable

import (
	"context"
	"errors"
	"fmt"
	"io"

	"munin/internal/memory"
	"munin/internal/store"
)

// ImportOptions tune Import; the zero value is a good default.
type ImportOptions struct {
	// BatchSize is the versions written per transaction (default 500).
	BatchSize int
	// MaxContent is the largest content accepted (default memory.DefaultMaxContent).
	MaxContent int
}

// ImportResult counts what Import did.
type ImportResult struct {
	// Lines is the number of versions read.
	Lines int
	// Imported were written; Skipped were already present, identical.
	Imported, Skipped int
	// Created reports that the project did not exist before.
	Created bool
}

// Import reads JSON Lines as Export writes them and stores the versions
// verbatim in ref, creating the workspace and project if they are new.
// Versions go through the workspace's single writer, BatchSize per
// transaction. It is idempotent: versions already present and identical are
// skipped. The first bad line — unparsable, invalid, a conflict with a stored
// version or a gap — stops the import with an error naming the line; nothing
// of its batch is written, earlier batches stay (run the fixed file again:
// they are skipped).
func Import(ctx context.Context, st *store.Store, ref memory.ProjectRef, r io.Reader, opts ImportOptions) (ImportResult, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 500
	}
	if opts.MaxContent <= 0 {
		opts.MaxContent = memory.DefaultMaxContent
	}
	if err := ref.Validate(); err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	ensured := false
	dec := newDecoder(r)
	batch := make([]memory.Version, 0, opts.BatchSize)
	lines := make([]int, 0, opts.BatchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// A file whose first batch is refused must not leave an empty new
		// project behind, so the project is created after that batch passed
		// validation (a gap or conflict found in the transaction still can).
		for i, v := range batch {
			if err := store.ValidateVersion(v, opts.MaxContent); err != nil {
				return lineError(lines[i], err)
			}
		}
		if !ensured {
			created, err := st.EnsureProject(ctx, ref)
			if err != nil {
				return err
			}
			res.Created, ensured = created, true
		}
		br, err := st.ImportVersions(ctx, ref, batch, opts.MaxContent)
		if err != nil {
			var ie *store.ImportError
			if errors.As(err, &ie) {
				return lineError(lines[ie.Index], ie.Err)
			}
			return err
		}
		res.Imported += br.Imported
		res.Skipped += br.Skipped
		batch, lines = batch[:0], lines[:0]
		return nil
	}
	for {
		v, n, err := dec.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("import into %s: %w", ref, err)
		}
		res.Lines++
		batch, lines = append(batch, v), append(lines, n)
		if len(batch) == opts.BatchSize {
			if err := flush(); err != nil {
				return res, fmt.Errorf("import into %s: %w", ref, err)
			}
		}
	}
	if err := flush(); err != nil {
		return res, fmt.Errorf("import into %s: %w", ref, err)
	}
	return res, nil
}
