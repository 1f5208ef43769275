package reqlog

import (
	"context"
	"testing"
)

func TestNoteCaller(t *testing.T) {
	ctx, info := With(context.Background())
	NoteCaller(ctx, "claude", "ws/proj")
	if info.Agent != "claude" || info.Project != "ws/proj" {
		t.Fatalf("info = %+v", info)
	}
	// Outside a request record nothing happens (and nothing panics).
	NoteCaller(context.Background(), "x", "y")
}

func TestNoteRefused(t *testing.T) {
	ctx, info := With(context.Background())
	NoteRefused(ctx, "key 2 of 3 is unknown or revoked")
	if info.Refused != "key 2 of 3 is unknown or revoked" || info.Agent != "" {
		t.Fatalf("info = %+v", info)
	}
	NoteRefused(context.Background(), "x")
}
