package portable

import (
	"context"
	"fmt"
	"io"
	"time"

	"munin/internal/embed"
	"munin/internal/memory"
	"munin/internal/store"
)

// EmbedResult is what FillEmbeddings did for one project.
type EmbedResult struct {
	Ref memory.ProjectRef
	// Missing is the count of live entries without a vector before the
	// fill; Embedded the vectors computed and stored; Left those still
	// missing after it (refused by the endpoint).
	Missing, Embedded, Left int
	Duration                time.Duration
}

// FillEmbeddings computes the missing vectors of each project in refs (every
// project when refs is empty) with emb, in batches, with a progress bar per
// project on w (plain lines when w is not a terminal) — what the server's
// worker does in the background, done now and offline (munin reindex
// --embeddings). A batch the endpoint fails three times in a row ends it with
// the error; what was stored stays.
func FillEmbeddings(ctx context.Context, st *store.Store, emb embed.Embedder, refs []memory.ProjectRef, w io.Writer) ([]EmbedResult, error) {
	refs, err := orAllProjects(ctx, st, refs)
	if err != nil {
		return nil, err
	}
	worker := embed.NewWorker(st, emb, embed.Options{})
	defer worker.Close()
	var out []EmbedResult
	for _, ref := range refs {
		res := EmbedResult{Ref: ref}
		missing, err := st.VectorBacklog(ctx, ref, emb.Model())
		if err != nil {
			return out, fmt.Errorf("embed %s: %w", ref, err)
		}
		res.Missing = missing
		bar := newProgress(w, ref.String(), "vectors", missing)
		start := time.Now()
		res.Embedded, err = worker.FillProject(ctx, ref, bar.add)
		res.Duration = time.Since(start)
		bar.finish()
		if err != nil {
			return append(out, res), fmt.Errorf("embed %s: %w", ref, err)
		}
		if res.Left, err = st.VectorBacklog(ctx, ref, emb.Model()); err != nil {
			return append(out, res), fmt.Errorf("embed %s: %w", ref, err)
		}
		out = append(out, res)
	}
	return out, nil
}
