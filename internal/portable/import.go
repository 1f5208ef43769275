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
	// BatchSize is the lines (versions and proposals) written per
	// transaction (default 500).
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
	// Proposals is the number of proposals read; ProposalsImported were
	// written (or brought a decision to a stored pending one),
	// ProposalsSkipped were already present.
	Proposals, ProposalsImported, ProposalsSkipped int
	// Created reports that the project did not exist before.
	Created bool
}

// Import reads JSON Lines as Export writes them and stores the versions
// and proposals verbatim in ref, creating the workspace and project if they
// are new. Lines go through the workspace's single writer, BatchSize per
// transaction. It is idempotent: versions and proposals already present and
// identical are skipped. The first bad line — unparsable, invalid, a
// conflict with a stored version or proposal, a gap, a pending proposal
// past the project's bound — stops the import with an error naming the
// line; nothing of its batch is written, earlier batches stay (run the
// fixed file again: they are skipped). Files written before proposals,
// valid_until and supersedes existed import unchanged.
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
	im := importer{st: st, ref: ref, opts: opts}
	dec := newDecoder(r)
	for {
		rec, n, err := dec.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return im.res, fmt.Errorf("import into %s: %w", ref, err)
		}
		im.add(rec, n)
		if im.size() == opts.BatchSize {
			if err := im.flush(ctx); err != nil {
				return im.res, fmt.Errorf("import into %s: %w", ref, err)
			}
		}
	}
	if err := im.flush(ctx); err != nil {
		return im.res, fmt.Errorf("import into %s: %w", ref, err)
	}
	return im.res, nil
}

// importer gathers one batch of lines and writes it.
type importer struct {
	st      *store.Store
	ref     memory.ProjectRef
	opts    ImportOptions
	res     ImportResult
	ensured bool
	batch   store.ImportBatch
	// vLines and pLines are the line numbers of the batch's versions and
	// proposals.
	vLines, pLines []int
}

// add puts the record of line n into the batch.
func (im *importer) add(rec record, n int) {
	if rec.proposal != nil {
		im.res.Proposals++
		im.batch.Proposals, im.pLines = append(im.batch.Proposals, *rec.proposal), append(im.pLines, n)
		return
	}
	im.res.Lines++
	im.batch.Versions, im.vLines = append(im.batch.Versions, rec.version), append(im.vLines, n)
}

func (im *importer) size() int { return len(im.vLines) + len(im.pLines) }

// line is the line number of the batch's version or proposal i.
func (im *importer) line(i int, proposal bool) int {
	if proposal {
		return im.pLines[i]
	}
	return im.vLines[i]
}

// flush writes the batch in one transaction.
func (im *importer) flush(ctx context.Context) error {
	if im.size() == 0 {
		return nil
	}
	// A file whose first batch is refused must not leave an empty new
	// project behind, so the project is created after that batch passed
	// validation (a gap or conflict found in the transaction still can).
	for i, v := range im.batch.Versions {
		if err := store.ValidateVersion(v, im.opts.MaxContent); err != nil {
			return lineError(im.line(i, false), err)
		}
	}
	for i, p := range im.batch.Proposals {
		if err := store.ValidateProposal(p, im.opts.MaxContent); err != nil {
			return lineError(im.line(i, true), err)
		}
	}
	if !im.ensured {
		created, err := im.st.EnsureProject(ctx, im.ref)
		if err != nil {
			return err
		}
		im.res.Created, im.ensured = created, true
	}
	br, err := im.st.Import(ctx, im.ref, im.batch, im.opts.MaxContent)
	if err != nil {
		var ie *store.ImportError
		if errors.As(err, &ie) {
			return lineError(im.line(ie.Index, ie.Proposal), ie.Err)
		}
		return err
	}
	im.res.Imported += br.Imported
	im.res.Skipped += br.Skipped
	im.res.ProposalsImported += br.ProposalsImported
	im.res.ProposalsSkipped += br.ProposalsSkipped
	im.batch = store.ImportBatch{Versions: im.batch.Versions[:0], Proposals: im.batch.Proposals[:0]}
	im.vLines, im.pLines = im.vLines[:0], im.pLines[:0]
	return nil
}
