package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// resourcePage bounds one resources/list page: the list tool's largest page
// (memory.MaxListLimit), project resources included.
const resourcePage = memory.MaxListLimit

// listCursor is where the next resources/list page starts: in project P,
// after its project resource (Listed) and at the list tool's cursor C.
// It travels std-base64 encoded, because mcp-go decodes every resources/list
// cursor that way before the hook runs and answers -32602 to one that does
// not decode. It names only a project of the caller: the service checks it
// again for every page.
type listCursor struct {
	Project string `json:"p"`
	Listed  bool   `json:"l,omitempty"`
	Cursor  string `json:"c,omitempty"`
}

func (lc listCursor) encode() mcp.Cursor {
	b, _ := json.Marshal(lc) // plain strings: cannot fail
	return mcp.Cursor(base64.StdEncoding.EncodeToString(b))
}

// decodeListCursor reads a cursor of resources/list; ok is false for one
// Munin did not make.
func decodeListCursor(c mcp.Cursor) (listCursor, bool) {
	var lc listCursor
	b, err := base64.StdEncoding.DecodeString(string(c))
	if err != nil || json.Unmarshal(b, &lc) != nil || lc.Project == "" {
		return listCursor{}, false
	}
	return lc, true
}

// addListHook fills resources/list from the service. mcp-go lists only
// resources registered up front and has no per-caller list handler, so the
// page is put in by its after-hook (mcp-go v1.2.1 server/hooks.go
// AddAfterListResources). A hook cannot return an error: a cursor Munin did
// not make, or one naming a project the caller no longer holds, answers an
// empty last page instead of -32602 (TestResourceListForeignCursor).
func (r resources) addListHook(hooks *server.Hooks) {
	hooks.AddAfterListResources(func(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		res.Resources, res.NextCursor = r.listPage(ctx, req.Params.Cursor)
	})
}

// listPage is one resources/list page for the caller in ctx: its projects in
// key order, each as its project resource followed by its live entries by
// slug. A server-admin key reaches no project and lists nothing.
func (r resources) listPage(ctx context.Context, cursor mcp.Cursor) ([]mcp.Resource, mcp.Cursor) {
	out := []mcp.Resource{}
	c, err := callerOf(ctx)
	if err != nil {
		return out, ""
	}
	projects := c.Projects()
	at := listCursor{}
	start := 0
	if cursor != "" {
		var ok bool
		if at, ok = decodeListCursor(cursor); !ok {
			return out, ""
		}
		start = -1
		for i, p := range projects {
			if p.String() == at.Project {
				start = i
			}
		}
		if start < 0 {
			return out, ""
		}
	}
	for i := start; i < len(projects); i++ {
		project := projects[i].String()
		if i != start || cursor == "" {
			at = listCursor{Project: project}
		}
		if !at.Listed {
			if len(out) == resourcePage {
				return out, at.encode()
			}
			out = append(out, mcp.Resource{URI: projectURI(project), Name: project,
				Title: "project " + project, MIMEType: projectMIME,
				Description: "The entry list of " + project})
			at.Listed = true
		}
		for {
			if len(out) == resourcePage {
				return out, at.encode()
			}
			l, err := r.svc.List(ctx, c, service.ListRequest{Project: project, Cursor: at.Cursor, Limit: resourcePage - len(out)})
			if err != nil {
				// An internal error is logged; a refusal (a garbled list
				// cursor) ends the listing, as a hook cannot answer one.
				_ = r.public(err)
				return out, ""
			}
			for _, e := range l.Entries {
				out = append(out, entryResource(e))
			}
			at.Cursor = l.NextCursor
			if at.Cursor == "" {
				break
			}
		}
	}
	return out, ""
}

// entryResource is the resources/list item of an entry.
func entryResource(e service.ListEntry) mcp.Resource {
	title := e.Title
	if title == "" {
		title = e.Slug
	}
	return mcp.Resource{URI: entryURI(e.Project, e.Slug), Name: e.Project + "/" + e.Slug, Title: title,
		MIMEType:  entryMIME,
		Annotated: mcp.Annotated{Annotations: &mcp.Annotations{LastModified: e.UpdatedAt.UTC().Format(time.RFC3339)}}}
}
