package remote

import (
	"context"

	"munin/internal/memory"
)

// A project's similar setting lives in its workspace file, beside review:
// setting and reading it go to the workspace's owner, whose writer keeps
// the setting for its writes (store/settings.go).

// similarSetArgs are the arguments of SetSimilar.
type similarSetArgs struct {
	Ref     memory.ProjectRef
	Similar string
}

// similarSettingMethods adds the server sides of SetSimilar and
// SimilarSetting.
func similarSettingMethods(d Data, m map[string]handler) {
	serve(m, "SetSimilar", func(ctx context.Context, a similarSetArgs) (bool, error) {
		return true, d.SetSimilar(ctx, a.Ref, a.Similar)
	})
	serve(m, "SimilarSetting", func(ctx context.Context, a refArgs) (string, error) { return d.SimilarSetting(ctx, a.Ref) })
}

// SetSimilar is DataStore.SetSimilar on the workspace's owner.
func (r *Router) SetSimilar(ctx context.Context, ref memory.ProjectRef, similar string) error {
	_, err := on(ctx, r, ref.Workspace, func(b Backend) (bool, error) { return true, b.SetSimilar(ctx, ref, similar) })
	return err
}

// SimilarSetting is DataStore.SimilarSetting on the workspace's owner.
func (r *Router) SimilarSetting(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (string, error) { return b.SimilarSetting(ctx, ref) })
}

// SetSimilar asks the owner.
func (n node) SetSimilar(ctx context.Context, ref memory.ProjectRef, similar string) error {
	_, err := invoke[similarSetArgs, bool](ctx, n, "SetSimilar", similarSetArgs{ref, similar})
	return err
}

// SimilarSetting asks the owner.
func (n node) SimilarSetting(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return invoke[refArgs, string](ctx, n, "SimilarSetting", refArgs{ref})
}
