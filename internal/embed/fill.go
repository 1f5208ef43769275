package embed

import (
	"context"

	"munin/internal/memory"
)

// fillAttempts is how often Fill tries a failing batch before it gives up.
const fillAttempts = 3

// Fill embeds everything missing in workspace ws now, in the caller's
// goroutine, calling progress with the count of each stored batch. A batch
// that fails fillAttempts times in a row ends it with the error; texts the
// endpoint refuses for good are skipped.
func (w *Worker) Fill(ctx context.Context, ws string, progress func(n int)) (int, error) {
	sp := newSpace(ws)
	sp.scan = true
	return w.fill(ctx, sp, progress)
}

// FillProject is Fill for one project (munin reindex --embeddings W/P).
func (w *Worker) FillProject(ctx context.Context, ref memory.ProjectRef, progress func(n int)) (int, error) {
	sp := newSpace(ref.Workspace)
	sp.scan, sp.project = true, ref.Project
	return w.fill(ctx, sp, progress)
}

func (w *Worker) fill(ctx context.Context, sp *space, progress func(n int)) (int, error) {
	total, fails := 0, 0
	for {
		n, err := w.step(ctx, sp)
		if err != nil {
			if fails++; fails >= fillAttempts || ctx.Err() != nil {
				return total, err
			}
			if !w.sleep(ctx, w.opts.backoff(fails)) {
				return total, ctx.Err()
			}
			continue
		}
		if n == 0 {
			return total, nil
		}
		fails = 0
		total += n
		if progress != nil {
			progress(n)
		}
	}
}
