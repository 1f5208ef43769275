package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// eras are the protocol versions Munin serves: 2026-07-28 and the newest
// session-based one.
var eras = []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION}

// resFixture is a harness in which alice writes in ws/alpha, where
// notes/a holds "# First\nbody one", and gus in ws/gamma, where
// notes/secret holds "not alice's".
type resFixture struct {
	h            *harness
	tokA         string
	callA, callG memory.Caller
}

// eachEra runs fn as a subtest per protocol era on a fresh resFixture.
func eachEra(t *testing.T, fn func(t *testing.T, era string, f resFixture)) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			h := newHarness(t, service.Options{})
			f := resFixture{h: h}
			f.tokA, f.callA = h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
			_, f.callG = h.env.Key(t, "ws", "gamma", "gus", memory.RoleWrite)
			seed(t, h, f.callA, "ws/alpha", "notes/a", "# First\nbody one")
			seed(t, h, f.callG, "ws/gamma", "notes/secret", "not alice's")
			fn(t, era, f)
		})
	}
}

// seed writes content to slug in project as caller c, through the service.
func seed(t *testing.T, h *harness, c memory.Caller, project, slug, content string) service.WriteResult {
	t.Helper()
	res, err := h.env.Svc.Remember(context.Background(), c, service.RememberRequest{Project: project, Slug: slug, Content: content})
	if err != nil {
		t.Fatalf("remember %s %s: %v", project, slug, err)
	}
	return res
}

// listAllResources pages resources/list to its end with the client and
// returns every page.
func listAllResources(t *testing.T, c *client.Client) [][]mcp.Resource {
	t.Helper()
	var pages [][]mcp.Resource
	req := mcp.ListResourcesRequest{}
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("resources/list still has a next cursor after 100 pages")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := c.ListResourcesByPage(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("resources/list page %d: %v", i, err)
		}
		pages = append(pages, res.Resources)
		if res.NextCursor == "" {
			return pages
		}
		req.Params.Cursor = res.NextCursor
	}
}

// TestResourceListPagesEverythingOnce: in both eras resources/list pages,
// at most memory.MaxListLimit a page, through exactly the caller's projects
// and their live entries — each once, in key order, project first — and
// nothing of a project it holds no key for, no forgotten entry and no
// pending proposal; a server-admin key lists nothing. With n = 199 the
// first page ends exactly at ws/alpha's last entry, with 250 inside them.
func TestResourceListPagesEverythingOnce(t *testing.T) {
	for _, n := range []int{memory.MaxListLimit - 1, memory.MaxListLimit + 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testResourceListPages(t, n) })
	}
}

func testResourceListPages(t *testing.T, n int) {
	eachEra(t, func(t *testing.T, era string, f resFixture) {
		h, callA := f.h, f.callA
		tokB, callB := h.env.Key(t, "ws", "beta", "bob", memory.RoleWrite)
		_, callP := h.env.Key(t, "ws", "alpha", "pat", memory.RolePropose)
		admin, _ := h.env.ServerAdmin(t, "root")

		var want []string
		want = append(want, "munin://ws/alpha", "munin://ws/alpha/notes/a")
		for i := range n {
			slug := fmt.Sprintf("notes/n%03d", i)
			seed(t, h, callA, "ws/alpha", slug, "alpha "+slug)
			if i != 7 {
				want = append(want, "munin://ws/alpha/"+slug)
			}
		}
		if _, err := h.env.Svc.Forget(context.Background(), callA, service.ForgetRequest{Project: "ws/alpha", Slug: "notes/n007"}); err != nil {
			t.Fatal(err)
		}
		if r := seed(t, h, callP, "ws/alpha", "notes/proposed", "pending"); r.State != "pending" {
			t.Fatalf("propose key's remember: state %q, want pending", r.State)
		}
		want = append(want, "munin://ws/beta")
		for _, slug := range []string{"b/one", "b/two"} {
			seed(t, h, callB, "ws/beta", slug, "beta "+slug)
			want = append(want, "munin://ws/beta/"+slug)
		}

		c := connectEra(t, h.url, f.tokA+","+tokB, era)
		pages := listAllResources(t, c)
		if len(pages) < 2 {
			t.Fatalf("%d resources in %d page(s), want more than one page", len(want), len(pages))
		}
		var got []string
		for i, p := range pages {
			if len(p) > memory.MaxListLimit {
				t.Errorf("page %d holds %d resources, more than %d", i, len(p), memory.MaxListLimit)
			}
			for _, r := range p {
				got = append(got, r.URI)
				switch {
				case r.URI == "munin://ws/beta":
					if r.Name != "ws/beta" || r.MIMEType != "application/json" {
						t.Errorf("project resource %+v", r)
					}
				case r.URI == "munin://ws/beta/b/one":
					if r.Name != "ws/beta/b/one" || r.Title != "beta b/one" || r.MIMEType != "text/markdown" ||
						r.Annotations == nil || r.Annotations.LastModified == "" {
						t.Errorf("entry resource %+v", r)
					}
				}
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("listed %d resources, want %d; first difference: %s", len(got), len(want), firstDiff(got, want))
		}

		adminC := connectEra(t, h.url, admin, era)
		if pages := listAllResources(t, adminC); len(pages) != 1 || len(pages[0]) != 0 {
			t.Errorf("server-admin key lists %v, want nothing", pages)
		}
	})
}

// firstDiff names the first place two lists differ.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d got %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// TestResourceListForeignCursor: a cursor naming a project the caller holds
// no key for answers an empty last page (nothing of that project); one
// that is no Munin cursor too; one that is not even base64 gets mcp-go's
// -32602. mcp-go hooks cannot answer an error, so a foreign cursor cannot
// get -32602 as the pagination page of the spec asks (SHOULD): this test
// pins that.
func TestResourceListForeignCursor(t *testing.T) {
	eachEra(t, func(t *testing.T, era string, f resFixture) {
		s := newRawSession(t, f.h.url, f.tokA, era)

		for name, cursor := range map[string]string{
			"another project": string(listCursor{Project: "ws/gamma", Listed: true}.encode()),
			"not munin's":     base64.StdEncoding.EncodeToString([]byte("notes/a")),
		} {
			var res mcp.ListResourcesResult
			s.ok(t, "resources/list", map[string]any{"cursor": cursor}, &res)
			if len(res.Resources) != 0 || res.NextCursor != "" {
				t.Errorf("%s: cursor %q answers %+v, want an empty last page", name, cursor, res)
			}
		}
		r := s.call(t, "resources/list", map[string]any{"cursor": "%%%"})
		if r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("undecodable cursor: answer %+v, want error -32602", r)
		}
	})
}

// TestResourceTemplatesAndCachingHints: templates/list names the entry and
// project templates in both eras; in 2026-07-28 it and resources/list,
// resources/read and an empty prompts/list carry ttlMs and cacheScope
// (templates public for an hour; per-caller answers private, stale at
// once), while tools/list keeps mcp-go's defaults.
func TestResourceTemplatesAndCachingHints(t *testing.T) {
	type hints struct {
		TTLMs      *int64 `json:"ttlMs"`
		CacheScope string `json:"cacheScope"`
	}
	eachEra(t, func(t *testing.T, era string, f resFixture) {
		s := newRawSession(t, f.h.url, f.tokA, era)

		var tl mcp.ListResourceTemplatesResult
		s.ok(t, "resources/templates/list", nil, &tl)
		var templates []string
		for _, tpl := range tl.ResourceTemplates {
			templates = append(templates, tpl.Name+" "+tpl.URITemplate.Raw()+" "+tpl.MIMEType)
		}
		want := "entry munin://{workspace}/{project}/{+slug} text/markdown\nproject munin://{workspace}/{project} application/json"
		if strings.Join(templates, "\n") != want {
			t.Errorf("templates:\n%s\nwant:\n%s", strings.Join(templates, "\n"), want)
		}
		var pl struct {
			Prompts []json.RawMessage `json:"prompts"`
		}
		s.ok(t, "prompts/list", nil, &pl)
		if pl.Prompts == nil || len(pl.Prompts) != 0 {
			t.Errorf("prompts/list: %v, want an empty list", pl.Prompts)
		}

		modern := mcp.IsModernProtocol(era)
		for _, c := range []struct {
			method string
			params map[string]any
			ttl    int64
			scope  string
		}{
			{"resources/templates/list", nil, 3_600_000, "public"},
			{"resources/list", nil, 0, "private"},
			{"resources/read", map[string]any{"uri": "munin://ws/alpha/notes/a"}, 0, "private"},
			{"resources/read", map[string]any{"uri": "munin://ws/alpha"}, 0, "private"},
			{"prompts/list", nil, 0, "private"},
		} {
			var got hints
			raw := s.ok(t, c.method, c.params, &got)
			switch {
			case !modern && (got.TTLMs != nil || got.CacheScope != ""):
				t.Errorf("%s %v in %s carries caching hints: %s", c.method, c.params, era, raw)
			case modern && (got.TTLMs == nil || *got.TTLMs != c.ttl || got.CacheScope != c.scope):
				t.Errorf("%s %v: %s, want ttlMs %d and cacheScope %s", c.method, c.params, raw, c.ttl, c.scope)
			}
		}
	})
}
