package service

import (
	"context"
	"errors"

	"munin/internal/memory"
)

// One workspace of the caller that cannot be read — in a cluster, while
// its owner fails over (a few seconds of unavailable); on any server, a
// file whose read fails — does not fail the caller's other workspaces: the
// answer holds the changes of those that were read, next_cursor keeps the
// failed workspace's position as it was (nothing of it is skipped: the
// next read from next_cursor brings its changes), and Unavailable names
// the caller's projects in it. The whole call fails only when the error is
// the caller's (an invalid or expired cursor: the cursor is invalid for
// every workspace, and the caller must start again anyway), when the
// caller left, or when no workspace could be read at all (then there is
// nothing to answer, and an error says so more plainly than an empty page).

// Unavailable is a project of the caller whose changes an answer does not
// hold, and why: Code unavailable (retry: the workspace is moving to
// another node, or not ready) or internal (logged at the server).
type Unavailable struct {
	Project string      `json:"project"`
	Code    memory.Code `json:"code"`
	Message string      `json:"message"`
}

// settleReads decides what the workspaces' failed reads mean for the call:
// nil when the answer may go out without them, else the call's error.
func settleReads(ctx context.Context, wss []*feedWorkspace) error {
	var first error
	failed := 0
	for _, w := range wss {
		if w.err == nil {
			continue
		}
		failed++
		if first == nil {
			first = w.err
		}
		if !workspaceFailure(w.err) {
			return w.err
		}
	}
	switch {
	case failed == 0:
		return nil
	case failed == len(wss):
		return first
	case ctx.Err() != nil:
		// The caller left (or the server shuts down): nobody reads the answer.
		return first
	}
	return nil
}

// workspaceFailure reports whether err is the failure of one workspace's
// read (its owner or its file), not the caller's doing.
func workspaceFailure(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch memory.ErrorCode(err) {
	case memory.CodeUnavailable, memory.CodeInternal:
		return true
	}
	return false
}

// unavailable lists the caller's projects in workspaces whose read failed,
// in key order.
func unavailable(wss []*feedWorkspace) []Unavailable {
	var out []Unavailable
	for _, w := range wss {
		if w.err == nil {
			continue
		}
		u := Unavailable{Code: memory.ErrorCode(w.err), Message: "internal error"}
		var me *memory.Error
		if errors.As(w.err, &me) && me.Code != memory.CodeInternal {
			u.Message = me.Message
		}
		for _, p := range w.projects {
			u.Project = memory.ProjectRef{Workspace: w.name, Project: p.Project}.String()
			out = append(out, u)
		}
	}
	return out
}
