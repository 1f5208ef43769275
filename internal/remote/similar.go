package remote

import (
	"context"

	"munin/internal/memory"
	"munin/internal/service"
)

// similarArgs are the arguments of Index.Similar.
type similarArgs struct {
	Ref        memory.ProjectRef
	Slug, Text string
}

// similarMethods adds the server side of Index.Similar.
func similarMethods(x service.Index, m map[string]handler) {
	serve(m, "Similar", func(ctx context.Context, a similarArgs) ([]memory.Similar, error) {
		return x.Similar(ctx, a.Ref, a.Slug, a.Text)
	})
}

// Similar asks the owner of ref's workspace: its index and store hold the
// project's entries.
func (r *Router) Similar(ctx context.Context, ref memory.ProjectRef, slug, text string) ([]memory.Similar, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.Similar, error) { return b.Similar(ctx, ref, slug, text) })
}

// Similar is Index.Similar on the owner.
func (n node) Similar(ctx context.Context, ref memory.ProjectRef, slug, text string) ([]memory.Similar, error) {
	return invoke[similarArgs, []memory.Similar](ctx, n, "Similar", similarArgs{ref, slug, text})
}
