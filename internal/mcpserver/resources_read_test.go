package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// readResource reads uri with the client and returns its one text content.
func readResource(t *testing.T, c *client.Client, uri string) mcp.TextResourceContents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("read %s: content is %T, want text", uri, res.Contents[0])
	}
	if tc.URI != uri {
		t.Errorf("read %s: content uri %q", uri, tc.URI)
	}
	return tc
}

// TestResourceReadEntryAndProject: in both eras an entry resource reads as
// its latest version's Markdown, and a project resource as the JSON list of
// its live entries; a remember through the tools is seen by the next read,
// read-your-writes, invariant 3 (docs/architecture.md#invariant-3-read-your-writes).
func TestResourceReadEntryAndProject(t *testing.T) {
	eachEra(t, func(t *testing.T, era string, f resFixture) {
		h := f.h
		_, callP := h.env.Key(t, "ws", "alpha", "pat", memory.RolePropose)
		seed(t, h, f.callA, "ws/alpha", "notes/b", "b")
		seed(t, h, callP, "ws/alpha", "notes/proposed", "pending")
		c := connectEra(t, h.url, f.tokA, era)

		e := readResource(t, c, "munin://ws/alpha/notes/a")
		if e.Text != "# First\nbody one" || e.MIMEType != "text/markdown" {
			t.Errorf("entry: %+v", e)
		}
		if e.Meta["munin/version"] != float64(1) || e.Meta["munin/agent"] != "alice" || e.Meta["munin/title"] != "First" {
			t.Errorf("entry _meta %v, want version 1, agent alice, title First", e.Meta)
		}

		callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "notes/a", "content": "second", "expected_version": 1})
		if e := readResource(t, c, "munin://ws/alpha/notes/a"); e.Text != "second" || e.Meta["munin/version"] != float64(2) {
			t.Errorf("read after remember: %q version %v, want \"second\" version 2", e.Text, e.Meta["munin/version"])
		}

		p := readResource(t, c, "munin://ws/alpha")
		if p.MIMEType != "application/json" {
			t.Errorf("project mime type %q", p.MIMEType)
		}
		var got projectContents
		dec := json.NewDecoder(strings.NewReader(p.Text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("project contents %s: %v", p.Text, err)
		}
		var lines []string
		for _, e := range got.Entries {
			lines = append(lines, e.Slug+" "+e.URI+" "+e.Title)
			if e.Version == 0 || e.UpdatedAt.IsZero() || e.Tags == nil {
				t.Errorf("project entry %+v lacks version, time or tags", e)
			}
		}
		want := "notes/a munin://ws/alpha/notes/a second\nnotes/b munin://ws/alpha/notes/b b"
		if got.Project != "ws/alpha" || strings.Join(lines, "\n") != want || got.NextCursor != "" {
			t.Errorf("project contents %s, want entries:\n%s", p.Text, want)
		}
	})
}

// TestResourceProjectIsBounded: a project resource holds at most
// memory.MaxListLimit entries and then the list tool's cursor.
func TestResourceProjectIsBounded(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, callA := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	for i := range memory.MaxListLimit + 1 {
		seed(t, h, callA, "ws/alpha", "n/"+strings.Repeat("x", 1+i/26)+string(rune('a'+i%26)), "x")
	}
	c := connectEra(t, h.url, tokA, mcp.LATEST_PROTOCOL_VERSION)
	var got projectContents
	if err := json.Unmarshal([]byte(readResource(t, c, "munin://ws/alpha").Text), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != memory.MaxListLimit || got.NextCursor == "" {
		t.Fatalf("project resource: %d entries, next cursor %q; want %d and a cursor", len(got.Entries), got.NextCursor, memory.MaxListLimit)
	}
	rest, _ := callOK[service.ListResult](t, c, "list", map[string]any{"cursor": got.NextCursor})
	if len(rest.Entries) != 1 {
		t.Errorf("list from the project resource's cursor: %d entries, want 1", len(rest.Entries))
	}
}

// TestResourceReadErrorShapes pins what a failed resources/read answers in
// each era. Another project's URI answers exactly like one of a project
// that does not exist and like a missing slug of it, invariant 7
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects);
// the text is the get tool's. A URI no template matches gets mcp-go's
// resource-not-found code (-32002, or -32602 in 2026-07-28). But mcp-go
// v1.2.1 sends every error of a resource handler as -32603 without data
// (server/handler_errors.go), so a munin URI that is not found, not the
// caller's or malformed cannot answer SEP-2164's -32602 with data.uri:
// this test breaks when mcp-go lets a handler choose, and then the
// handler should answer the not-found code with data {uri}.
func TestResourceReadErrorShapes(t *testing.T) {
	eachEra(t, func(t *testing.T, era string, f resFixture) {
		tokA := f.tokA
		admin, _ := f.h.env.ServerAdmin(t, "root")
		s := newRawSession(t, f.h.url, tokA, era)

		notFound := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(era) {
			notFound = mcp.INVALID_PARAMS
		}
		for _, c := range []struct {
			uri, token string
			code       int
			msg        string
		}{
			{"munin://ws/gamma/notes/secret", tokA, mcp.INTERNAL_ERROR, "forbidden: no key for project ws/gamma"},
			{"munin://ws/gamma/notes/none", tokA, mcp.INTERNAL_ERROR, "forbidden: no key for project ws/gamma"},
			{"munin://ws/gamma", tokA, mcp.INTERNAL_ERROR, "forbidden: no key for project ws/gamma"},
			{"munin://ws/nosuch/notes/secret", tokA, mcp.INTERNAL_ERROR, "forbidden: no key for project ws/nosuch"},
			{"munin://ws/alpha/notes/none", tokA, mcp.INTERNAL_ERROR, "not_found: "},
			{"munin://ws/alpha/notes/a", admin, mcp.INTERNAL_ERROR, "forbidden: a server-admin key"},
			{"munin://ws/alpha/", tokA, mcp.INTERNAL_ERROR, `invalid: resource uri "munin://ws/alpha/"`},
			{"munin://ws/alpha/notes/a?version=1", tokA, mcp.INTERNAL_ERROR, `invalid: resource uri "munin://ws/alpha/notes/a?version=1"`},
			{"munin://WS/alpha/notes/a", tokA, mcp.INTERNAL_ERROR, `invalid: resource uri "munin://WS/alpha/notes/a"`},
			{"munin://ws/alpha/../gamma/notes/secret", tokA, mcp.INTERNAL_ERROR, "invalid: resource uri "},
			{"test://nonexistent-resource-for-conformance-testing", tokA, notFound, "handler not found for resource URI"},
		} {
			sess := s
			if c.token != tokA {
				sess = newRawSession(t, f.h.url, c.token, era)
			}
			r := sess.call(t, "resources/read", map[string]any{"uri": c.uri})
			switch {
			case r.Error == nil:
				t.Errorf("read %s: %s, want an error", c.uri, r.Result)
			case r.Error.Code != c.code || !strings.HasPrefix(r.Error.Message, c.msg):
				t.Errorf("read %s: error %d %q, want %d %q…", c.uri, r.Error.Code, r.Error.Message, c.code, c.msg)
			case strings.HasPrefix(c.msg, "forbidden: no key") && r.Error.Message != c.msg:
				t.Errorf("read %s: error %q, want exactly %q", c.uri, r.Error.Message, c.msg)
			case len(r.Error.Data) != 0:
				t.Errorf("read %s: error data %s: mcp-go now sends data; answer data.uri (SEP-2164)", c.uri, r.Error.Data)
			case strings.Contains(r.Error.Message, "not alice's"):
				t.Errorf("read %s leaks content: %q", c.uri, r.Error.Message)
			}
		}
	})
}
