package mcpserver

// MCP resources: every live entry is a resource munin://workspace/project/slug
// (its latest version, Markdown), every project one munin://workspace/project
// (its entry list, JSON). They are read through the same service calls as the
// get and list tools, so authorization is the service's: a caller reaches
// exactly the projects it holds keys for, invariant 7
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
// Resources cost tools/list nothing: they are listed by resources/list.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// resourceScheme prefixes every Munin resource URI.
const resourceScheme = "munin://"

// MIME types of the two kinds of resources.
const (
	entryMIME   = "text/markdown"
	projectMIME = "application/json"
)

// templatesTTLMs is the caching hint on resources/templates/list: the
// templates are the same for every caller and change only with the binary.
const templatesTTLMs = int64(time.Hour / time.Millisecond)

// resourceOptions declare the resources capability, with subscribe and
// listChanged (subscribe.go: resources/subscribe up to 2025-11-25,
// resourceSubscriptions and resourcesListChanged of subscriptions/listen
// in 2026-07-28), and the caching hints protocol
// 2026-07-28 requires on resources/list, templates/list and read. Lists and
// reads depend on the caller's keys and change with every write: private
// and immediately stale. The empty prompts capability answers prompts/list
// with no prompts instead of -32601, which 2026-07-28 clients probing for
// cacheable lists (the conformance scenario caching) count as a failure.
func resourceOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(false),
		server.WithMethodCacheHints(mcp.MethodResourcesTemplatesList, templatesTTLMs, mcp.CacheScopePublic),
		server.WithMethodCacheHints(mcp.MethodResourcesList, 0, mcp.CacheScopePrivate),
		server.WithMethodCacheHints(mcp.MethodResourcesRead, 0, mcp.CacheScopePrivate),
	}
}

// resources serves resources/list and resources/read for one service.
type resources struct {
	svc *service.Service
	log *slog.Logger
}

// addResourceTemplates registers the two templates with their read handler.
// It must run before the server serves anything: with the listChanged
// capability on, mcp-go tells every session when a template is added.
func (r resources) addResourceTemplates(s *server.MCPServer) {
	entry := mcp.NewResourceTemplate(resourceScheme+"{workspace}/{project}/{+slug}", "entry",
		mcp.WithTemplateDescription("The latest live version of a Munin entry, as Markdown"),
		mcp.WithTemplateMIMEType(entryMIME))
	entry.Title = "Munin entry"
	project := mcp.NewResourceTemplate(resourceScheme+"{workspace}/{project}", "project",
		mcp.WithTemplateDescription(fmt.Sprintf("The live entries of a Munin project, as JSON (at most %d)", memory.MaxListLimit)),
		mcp.WithTemplateMIMEType(projectMIME))
	project.Title = "Munin project"
	// Both go to one handler that parses the URI itself: mcp-go tries the
	// templates in map order, and {+slug} matches more than a slug (an empty
	// one, a query), so the template that matched decides nothing.
	s.AddResourceTemplate(entry, r.read)
	s.AddResourceTemplate(project, r.read)
}

// read answers resources/read of a munin URI with the caller's keys.
//
// mcp-go v1.2.1 sends every error a resource handler returns as JSON-RPC
// -32603 with err.Error() as the message (server/handler_errors.go), so a
// not_found, forbidden or invalid here cannot carry the resource-not-found
// code (-32002 up to 2025-11-25, -32602 in 2026-07-28) nor data.uri.
// The message is the public "code: message" text, the same as the get
// tool's; TestResourceReadErrorShapes pins this gap.
func (r resources) read(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	c, err := callerOf(ctx)
	if err != nil {
		return nil, r.public(err)
	}
	ref, slug, err := parseResourceURI(uri)
	if err != nil {
		return nil, r.public(err)
	}
	if slug == "" {
		return r.readProject(ctx, c, uri, ref)
	}
	e, err := r.svc.Get(ctx, c, service.GetRequest{Project: ref.String(), Slug: slug})
	if err != nil {
		return nil, r.public(err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{
		URI: uri, MIMEType: entryMIME, Text: e.Content,
		Meta: map[string]any{"munin/title": e.Title, "munin/version": e.Version, "munin/agent": e.Agent},
	}}, nil
}

// projectEntry is one entry in a project resource's contents: the list
// tool's entry and its resource URI.
type projectEntry struct {
	service.ListEntry
	URI string `json:"uri"`
}

// projectContents is a project resource's contents: the first page of its
// live entries by slug; next_cursor continues with the list tool.
type projectContents struct {
	Project    string         `json:"project"`
	Entries    []projectEntry `json:"entries"`
	NextCursor string         `json:"next_cursor"`
}

// readProject answers a project resource: at most memory.MaxListLimit
// entries, the list tool's first page at its largest.
func (r resources) readProject(ctx context.Context, c memory.Caller, uri string, ref memory.ProjectRef) ([]mcp.ResourceContents, error) {
	l, err := r.svc.List(ctx, c, service.ListRequest{Project: ref.String(), Limit: memory.MaxListLimit})
	if err != nil {
		return nil, r.public(err)
	}
	out := projectContents{Project: ref.String(), Entries: make([]projectEntry, 0, len(l.Entries)), NextCursor: l.NextCursor}
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, projectEntry{ListEntry: e, URI: entryURI(e.Project, e.Slug)})
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: plain data
		return nil, r.public(fmt.Errorf("encode project resource: %w", err))
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: projectMIME, Text: string(b)}}, nil
}

// public turns err into what mcp-go may send: the public "code: message"
// text only; internal details go to the log.
func (r resources) public(err error) error {
	if memory.ErrorCode(err) == memory.CodeInternal {
		r.log.Error("mcp resource", "err", err)
	}
	return errors.New(memory.PublicMessage(err))
}

// entryURI is the resource URI of a slug in project ("workspace/project").
func entryURI(project, slug string) string { return resourceScheme + project + "/" + slug }

// projectURI is the resource URI of project ("workspace/project").
func projectURI(project string) string { return resourceScheme + project }

// parseResourceURI reads munin://workspace/project[/slug]. Names and slugs
// allow only [a-z0-9._/-], so a valid URI needs no percent-encoding and has
// one spelling; anything else — upper case, a query, a fragment, a port,
// an empty or dot segment — is invalid, named in the error.
func parseResourceURI(uri string) (memory.ProjectRef, string, error) {
	rest, ok := strings.CutPrefix(uri, resourceScheme)
	if !ok {
		return memory.ProjectRef{}, "", memory.Errorf(memory.CodeInvalid, "resource uri %q must start with %s", clipURI(uri), resourceScheme)
	}
	ws, rest, _ := strings.Cut(rest, "/")
	project, slug, hasSlug := strings.Cut(rest, "/")
	ref, err := memory.ParseProject("resource uri project", ws+"/"+project)
	if err != nil {
		return memory.ProjectRef{}, "", memory.Errorf(memory.CodeInvalid, "resource uri %q must be %sworkspace/project or %sworkspace/project/slug, names matching ^[a-z0-9][a-z0-9-]{0,62}$",
			clipURI(uri), resourceScheme, resourceScheme)
	}
	if !hasSlug {
		return ref, "", nil
	}
	if err := memory.ValidateSlug(slug); err != nil {
		why := err.Error()
		if me := (*memory.Error)(nil); errors.As(err, &me) {
			why = me.Message
		}
		return memory.ProjectRef{}, "", memory.Errorf(memory.CodeInvalid, "resource uri %q: %s", clipURI(uri), why)
	}
	return ref, slug, nil
}

// clipURI keeps an echoed URI short in an error message.
func clipURI(uri string) string {
	if len(uri) <= 200 {
		return uri
	}
	return strings.ToValidUTF8(uri[:200], "") + "…"
}
