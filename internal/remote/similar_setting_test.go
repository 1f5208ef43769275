package remote_test

import (
	"context"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
)

// The similar setting is set and read at the workspace's owner, and a write
// forwarded to the owner brings back what the owner's writer knows of it
// (WriteResult.SimilarOff), for a version and for a proposal; a bad value
// is refused and changes nothing.
func TestSimilarSettingAtTheOwner(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	ctx := context.Background()
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	r := router(url, &routes)
	if got, err := r.SimilarSetting(ctx, ref); err != nil || got != memory.SimilarOn {
		t.Fatalf("similar over the hop: %q, %v; want on", got, err)
	}
	if res, err := r.Append(ctx, ref, memory.Write{Slug: "a", Title: "t", Content: "x", Agent: "w"}); err != nil || res.SimilarOff {
		t.Fatalf("write with similar on over the hop: %+v, %v", res, err)
	}
	if err := r.SetSimilar(ctx, ref, memory.SimilarOff); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SimilarSetting(ctx, ref); err != nil || got != memory.SimilarOff {
		t.Fatalf("similar at the owner after SetSimilar over the hop: %q, %v", got, err)
	}
	if got, err := r.SimilarSetting(ctx, ref); err != nil || got != memory.SimilarOff {
		t.Errorf("similar over the hop: %q, %v; want off", got, err)
	}
	if res, err := r.Append(ctx, ref, memory.Write{Slug: "b", Title: "t", Content: "x", Agent: "w"}); err != nil || !res.SimilarOff || res.Version != 1 {
		t.Errorf("write with similar off over the hop: %+v, %v; want version 1 with SimilarOff", res, err)
	}
	if res, err := r.Append(ctx, ref, memory.Write{Slug: "c", Title: "t", Content: "x", Agent: "w", Review: memory.ProposeAlways}); err != nil || !res.SimilarOff || res.Proposal == 0 {
		t.Errorf("proposal with similar off over the hop: %+v, %v; want a proposal with SimilarOff", res, err)
	}
	if err := r.SetSimilar(ctx, ref, "sometimes"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("bad similar over the hop: %v, want invalid", err)
	}
	if got, err := st.SimilarSetting(ctx, ref); err != nil || got != memory.SimilarOff {
		t.Errorf("a refused SetSimilar changed the owner's setting to %q, %v", got, err)
	}
}
