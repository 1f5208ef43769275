package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// The changes tool: the change feed (service.Changes, docs/changes.md) over
// MCP — what was written in all the caller's projects since a cursor. A
// tool of its own rather than an argument of list or history: its answer
// spans every project of the caller (one cursor for all its keys), while
// every other tool acts in one project; its page is in commit order, not by
// slug; and an agent looking for "what changed" finds it by name. The
// feed takes no project argument: the cursor covers all the caller's
// projects, and the service, not a transport, decides what a caller sees.

// changesDescription tells an agent the one way to use the feed: once at
// the start of a session, from the cursor it kept from the last one.
const changesDescription = `Writes in your projects since a cursor, oldest first. Start each session with since = the next_cursor you kept ("now" the first time); keep the new one.`

// changesArgs are the changes tool's arguments: service.ChangesRequest with
// the descriptions a model reads in tools/list.
type changesArgs struct {
	Since string `json:"since,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

func (h handlers) changes(ctx context.Context, c memory.Caller, a changesArgs) (service.ChangesResult, string, error) {
	res, err := h.svc.Changes(ctx, c, service.ChangesRequest{Since: a.Since, Limit: a.Limit})
	if err != nil {
		return service.ChangesResult{}, "", err
	}
	return res, changesText(res, pageFull(a.Limit, len(res.Changes))), nil
}

// pageFull says whether a page came back as long as it may be: then more
// changes may wait beyond next_cursor.
func pageFull(limit, n int) bool {
	if limit <= 0 {
		limit = memory.DefaultChangesLimit
	}
	return n > 0 && n >= limit
}

// changesText renders a page of the feed for clients that read only the
// text: one line per change, and what to do with next_cursor.
func changesText(res service.ChangesResult, full bool) string {
	var b strings.Builder
	b.WriteString(count(len(res.Changes), "change", "changes"))
	if len(res.Changes) > 0 {
		b.WriteString(", oldest first:")
	}
	for _, ch := range res.Changes {
		fmt.Fprintf(&b, "\n- %s %s %s", when(ch.At), ch.Project, ch.Slug)
		if ch.Version > 0 {
			fmt.Fprintf(&b, " v%d", ch.Version)
		}
		fmt.Fprintf(&b, ": %s by %s", ch.Kind, ch.Agent)
		if ch.Client != "" {
			fmt.Fprintf(&b, " via %s", ch.Client) // the OAuth client it came through
		}
		if ch.Proposal != "" {
			fmt.Fprintf(&b, " (proposal %s)", ch.Proposal)
		}
	}
	for _, u := range res.Unavailable {
		fmt.Fprintf(&b, "\nnot read this time: %s (%s: %s); its changes come with a later call from next_cursor", u.Project, u.Code, u.Message)
	}
	if full {
		fmt.Fprintf(&b, "\nmore: call changes with since %q", res.NextCursor)
	} else {
		fmt.Fprintf(&b, "\nnext_cursor %q: keep it, and pass it as since next time", res.NextCursor)
	}
	return b.String()
}
