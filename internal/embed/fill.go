package embed

import (
	"context"
	"time"

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
	pause := time.Duration(0)
	for {
		n, err := w.step(ctx, sp)
		if err != nil {
			if fails++; fails >= fillAttempts || ctx.Err() != nil {
				return total, err
			}
			pause = min(max(2*pause, w.opts.MinBackoff), w.opts.MaxBackoff)
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-time.After(pause):
			}
			continue
		}
		if n == 0 {
			return total, nil
		}
		fails, pause = 0, 0
		total += n
		if progress != nil {
			progress(n)
		}
	}
}
