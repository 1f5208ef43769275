//go:build clients

// Tests with real MCP clients: the official TypeScript SDKs of both
// protocol eras (v1, 2025-11-25, with sessions and resources/subscribe; v2
// pinned to 2026-07-28, with subscriptions/listen), the MCP inspector's CLI
// and the MCP conformance suite's resource scenarios, all from the npm
// registry at the versions .ci/clients/package-lock.json pins, run against
// an in-process server on a loopback port. The Node side lives in
// .ci/clients; this file drives it and decides. Node 22 is needed (the
// inspector and the conformance suite refuse older ones): outside CI the
// test skips without it, with MUNIN_REQUIRE_NODE=1 (CI) it fails.
//
//	(cd .ci/clients && npm ci) && go test -tags clients -run TestClients -count=1 -v .
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestClients runs every client against one server. The seed: alice and bob
// write in acme/app (alice's notes/a), carol holds acme/other, dave holds
// acme/bulk with more entries than one resources/list page.
func TestClients(t *testing.T) {
	node := findNode(t)
	s := startClientServer(t)

	t.Run("SDK1Subscribe", func(t *testing.T) { testSDK1Subscribe(t, node, s) })
	t.Run("SDK1SubscribeForeignProject", func(t *testing.T) { testSDK1Foreign(t, node, s) })
	t.Run("SDK1ListRead", func(t *testing.T) { testSDK1ListRead(t, node, s) })
	t.Run("SDK1ListChanged", func(t *testing.T) { testSDK1ListChanged(t, node, s) })
	t.Run("SDK2Listen", func(t *testing.T) { testSDK2Listen(t, node, s) })
	t.Run("SDK2ListenServerShutdown", func(t *testing.T) { testSDK2Shutdown(t, node) })
	t.Run("Inspector", func(t *testing.T) { testInspector(t, node, s) })
	t.Run("Conformance", func(t *testing.T) { testConformance(t, node, s) })
}

// testSDK1Subscribe: alice subscribes to her entry; when bob writes it, her
// client hears notifications/resources/updated for its uri.
func testSDK1Subscribe(t *testing.T, node nodeEnv, s *clientServer) {
	alice := node.start(t, "sdk1.mjs", s.mcpURL, s.alice)
	alice.ok(t, "subscribe", map[string]any{"uri": s.entryA})
	s.write(t, s.bob, "notes/a", "bob replaced alice's note")
	ev := alice.event(t, "notifications/resources/updated for "+s.entryA+" after bob's write")
	if ev.Notification != "notifications/resources/updated" || ev.uri() != s.entryA {
		t.Fatalf("alice heard %s, want notifications/resources/updated for %s", ev, s.entryA)
	}
	// After unsubscribe the next write is not heard: bob's write to an
	// entry alice still follows (a second subscription) must come first.
	alice.ok(t, "subscribe", map[string]any{"uri": s.entryB})
	alice.ok(t, "unsubscribe", map[string]any{"uri": s.entryA})
	s.write(t, s.bob, "notes/a", "bob again, unheard")
	s.write(t, s.bob, "notes/b", "bob on b, heard")
	if ev := alice.event(t, "the update of notes/b"); ev.uri() != s.entryB {
		t.Fatalf("after unsubscribing notes/a alice heard %s first, want the update of %s", ev, s.entryB)
	}
}

// testSDK1Foreign: subscribing to a project the key does not hold answers
// exactly as for a project that does not exist, and the holder's writes
// there reach nobody else (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func testSDK1Foreign(t *testing.T, node nodeEnv, s *clientServer) {
	alice := node.start(t, "sdk1.mjs", s.mcpURL, s.alice)
	foreign := alice.call(t, "subscribe", map[string]any{"uri": "munin://acme/other/x"})
	missing := alice.call(t, "subscribe", map[string]any{"uri": "munin://acme/nonexistent/x"})
	norm := func(r reply, project string) string {
		b, _ := json.Marshal(r.withoutID())
		return strings.ReplaceAll(string(b), project, "<project>")
	}
	if f, m := norm(foreign, "acme/other"), norm(missing, "acme/nonexistent"); f != m {
		t.Fatalf("subscribing to carol's project answers differently from a nonexistent one:\n foreign: %s\n missing: %s", f, m)
	} else {
		t.Logf("subscribe to carol's project and to a nonexistent one: %s", f)
	}
	alice.ok(t, "subscribe", map[string]any{"uri": s.entryA})
	// Same workspace, so one feed in commit order: carol's write comes
	// before bob's, and anything alice heard of it would arrive first.
	s.write(t, s.carol, "x", "carol's note, not for alice")
	s.write(t, s.bob, "notes/a", "bob's note after carol's")
	ev := alice.event(t, "the update of notes/a")
	if ev.Notification != "notifications/resources/updated" || ev.uri() != s.entryA {
		t.Fatalf("alice heard %s before the update of %s: carol's write in acme/other reached her", ev, s.entryA)
	}
}

// testSDK1ListRead: resources/list pages through dave's project (more
// entries than one page) with none missing and none twice; templates; read
// of an entry and of a project; an unknown entry is an error.
func testSDK1ListRead(t *testing.T, node nodeEnv, s *clientServer) {
	dave := node.start(t, "sdk1.mjs", s.mcpURL, s.dave)
	var listed struct {
		URIs  []string `json:"uris"`
		Pages int      `json:"pages"`
	}
	dave.okInto(t, "listAll", map[string]any{}, &listed)
	want := map[string]bool{"munin://acme/bulk": true}
	for i := range bulkEntries {
		want[fmt.Sprintf("munin://acme/bulk/bulk/%03d", i)] = true
	}
	seen := map[string]bool{}
	var twice, foreign, missing []string
	for _, u := range listed.URIs {
		if seen[u] {
			twice = append(twice, u)
		}
		seen[u] = true
		if !want[u] {
			foreign = append(foreign, u)
		}
	}
	for u := range want {
		if !seen[u] {
			missing = append(missing, u)
		}
	}
	slices.Sort(missing)
	for _, bad := range []struct {
		what string
		uris []string
	}{{"listed twice", twice}, {"listed but not dave's", foreign}, {"not listed", missing}} {
		if len(bad.uris) > 0 {
			t.Errorf("%s: %d, first %v", bad.what, len(bad.uris), bad.uris[:min(5, len(bad.uris))])
		}
	}
	if listed.Pages < 2 {
		t.Errorf("%d resources in %d page(s): want more than one page", len(listed.URIs), listed.Pages)
	}
	var tpl struct {
		ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
	}
	dave.okInto(t, "templates", map[string]any{}, &tpl)
	var templates []string
	for _, x := range tpl.ResourceTemplates {
		templates = append(templates, x.URITemplate)
	}
	for _, w := range []string{"munin://{workspace}/{project}/{+slug}", "munin://{workspace}/{project}"} {
		if !slices.Contains(templates, w) {
			t.Errorf("templates %v lack %s", templates, w)
		}
	}
	if text, mime := readText(t, dave, "munin://acme/bulk/bulk/007"); text != bulkContent(7) || mime != "text/markdown" {
		t.Errorf("read of bulk/007: %q (%s), want %q (text/markdown)", text, mime, bulkContent(7))
	}
	text, mime := readText(t, dave, "munin://acme/bulk")
	var project struct {
		Project string `json:"project"`
		Entries []struct {
			Slug string `json:"slug"`
			URI  string `json:"uri"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(text), &project); err != nil || mime != "application/json" {
		t.Fatalf("read of munin://acme/bulk (%s): %v\n%s", mime, err, text)
	}
	if project.Project != "acme/bulk" || len(project.Entries) == 0 || project.Entries[0].URI != "munin://acme/bulk/"+project.Entries[0].Slug {
		t.Errorf("project resource: %s", text)
	}
	if r := dave.call(t, "read", map[string]any{"uri": "munin://acme/bulk/bulk/missing"}); r.Error == nil {
		t.Errorf("read of a missing entry answered %s, want an error", r.OK)
	} else {
		t.Logf("read of a missing entry (2025-11-25): %v %s", r.Error.Code, r.Error.Message)
	}
}

// testSDK1ListChanged: a subscribed client hears list_changed when a new
// slug appears in its project and when one is forgotten.
func testSDK1ListChanged(t *testing.T, node nodeEnv, s *clientServer) {
	alice := node.start(t, "sdk1.mjs", s.mcpURL, s.alice)
	alice.ok(t, "subscribe", map[string]any{"uri": s.entryA})
	s.write(t, s.bob, "notes/fresh", "a new slug")
	if ev := alice.event(t, "list_changed after bob's new slug"); ev.Notification != "notifications/resources/list_changed" {
		t.Fatalf("after a new slug alice heard %s, want notifications/resources/list_changed", ev)
	}
	// A barrier: whatever the first write still sends comes before the
	// update of notes/a, so the list_changed after it is the forget's.
	s.write(t, s.bob, "notes/a", "barrier")
	alice.until(t, "the update of notes/a", func(ev event) bool { return ev.uri() == s.entryA })
	s.forget(t, s.bob, "notes/fresh")
	if ev := alice.event(t, "list_changed after bob's forget"); ev.Notification != "notifications/resources/list_changed" {
		t.Fatalf("after a forget alice heard %s, want notifications/resources/list_changed", ev)
	}
}

// testSDK2Listen: a 2026-07-28 client listens (subscriptions/listen); the
// server honors the entry's uri, tags the update with the subscription's
// id, and the stream ends locally on close.
func testSDK2Listen(t *testing.T, node nodeEnv, s *clientServer) {
	alice := node.start(t, "sdk2.mjs", s.mcpURL, s.alice)
	var ack struct {
		HonoredFilter struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
			ResourcesListChanged  bool     `json:"resourcesListChanged"`
		} `json:"honoredFilter"`
	}
	alice.okInto(t, "listen", map[string]any{"name": "a", "filter": map[string]any{
		"resourceSubscriptions": []string{s.entryA}, "resourcesListChanged": true,
	}}, &ack)
	if !slices.Contains(ack.HonoredFilter.ResourceSubscriptions, s.entryA) {
		t.Fatalf("honored filter %+v lacks %s", ack.HonoredFilter, s.entryA)
	}
	s.write(t, s.bob, "notes/a", "bob writes for the listener")
	ev := alice.until(t, "notifications/resources/updated on the listen stream", func(ev event) bool {
		return ev.Notification == "notifications/resources/updated"
	})
	var meta struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(ev.Params, &meta)
	if ev.uri() != s.entryA || meta.Meta["io.modelcontextprotocol/subscriptionId"] == nil {
		t.Fatalf("update %s: want uri %s and _meta io.modelcontextprotocol/subscriptionId", ev, s.entryA)
	}
	var closed struct {
		How string `json:"how"`
	}
	alice.okInto(t, "close", map[string]any{"name": "a"}, &closed)
	if closed.How != "local" {
		t.Fatalf("the subscription closed by the client ended %q, want local", closed.How)
	}
}

// testSDK2Shutdown: a listen stream the server ends on shutdown ends
// gracefully (the listen result), not as a dropped connection. Its own
// server, as it is stopped.
func testSDK2Shutdown(t *testing.T, node nodeEnv) {
	s := startClientServer(t)
	alice := node.start(t, "sdk2.mjs", s.mcpURL, s.alice)
	var ack struct {
		HonoredFilter struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"honoredFilter"`
	}
	alice.okInto(t, "listen", map[string]any{"name": "a", "filter": map[string]any{"resourceSubscriptions": []string{s.entryA}}}, &ack)
	if !slices.Contains(ack.HonoredFilter.ResourceSubscriptions, s.entryA) {
		t.Fatalf("honored filter %+v lacks %s", ack.HonoredFilter, s.entryA)
	}
	// The stream is live: an update arrives on it, and nothing ended it
	// before (events arrive in order).
	s.write(t, s.bob, "notes/a", "before the shutdown")
	if ev := alice.event(t, "the update of notes/a"); ev.uri() != s.entryA {
		t.Fatalf("before the shutdown alice heard %s, want the update of %s", ev, s.entryA)
	}
	s.stop()
	if ev := alice.event(t, "the end of the listen stream on shutdown"); ev.Closed != "a" || ev.How != "graceful" {
		t.Fatalf("on shutdown the listen stream ended %s, want closed graceful", ev)
	}
}

// testInspector: the inspector's CLI lists and reads alice's entry in both
// eras and cannot read a project alice holds no key for. Its list must name
// the entry: without the resources capability it prints an empty list and
// exits 0.
func testInspector(t *testing.T, node nodeEnv, s *clientServer) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			run := func(key string, args ...string) (inspectorOut, error) {
				args = append([]string{"--cli", s.mcpURL, "--header", "Authorization: Bearer " + key, "--format", "json", "-q"}, args...)
				if era == "modern" {
					args = append(args, "--protocol-era", "modern")
				}
				return node.inspector(t, args...)
			}
			out, err := run(s.alice, "--method", "resources/list")
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			var list struct {
				Resources []struct{ URI string } `json:"resources"`
			}
			_ = json.Unmarshal(out.Result, &list)
			if !slices.ContainsFunc(list.Resources, func(r struct{ URI string }) bool { return r.URI == s.entryA }) {
				t.Fatalf("resources/list does not name %s: %s", s.entryA, out.raw)
			}
			out, err = run(s.alice, "--method", "resources/read", "--uri", s.entryB)
			if err != nil {
				t.Fatalf("resources/read %s: %v", s.entryB, err)
			}
			var read struct {
				Contents []struct{ Text string } `json:"contents"`
			}
			_ = json.Unmarshal(out.Result, &read)
			if len(read.Contents) != 1 || read.Contents[0].Text == "" {
				t.Fatalf("resources/read %s: %s", s.entryB, out.raw)
			}
			out, err = run(s.alice, "--method", "resources/read", "--uri", "munin://acme/other")
			if err == nil || out.Error == nil {
				t.Fatalf("alice read carol's project munin://acme/other: %s (%v)", out.raw, err)
			}
			if strings.Contains(out.raw, "carol") {
				t.Fatalf("the refusal tells of carol's project: %s", out.raw)
			}
		})
	}
}

// conformanceRuns are the suite's resource scenarios that need no fixtures,
// in each protocol revision they belong to.
var conformanceRuns = []struct{ spec, scenario string }{
	{"2025-11-25", "resources-list"},
	{"2025-11-25", "resources-subscribe"},
	{"2025-11-25", "resources-unsubscribe"},
	{"2026-07-28", "resources-list"},
	{"2026-07-28", "sep-2164-resource-not-found"},
	{"2026-07-28", "caching"},
}

// knownGaps are the checks allowed another status than SUCCESS, with the
// status they must have. sep-2164-data-uri: mcp-go v1.2.1 puts no data.uri
// on its resource-not-found error (docs/architecture.md, MCP resources; the
// notes' gap G1); the conformance suite rates that SHOULD a WARNING. Pinned:
// when upstream adds data.uri the check turns SUCCESS and this test fails,
// so the entry goes.
var knownGaps = map[string]string{"sep-2164-data-uri": "WARNING"}

// testConformance runs each scenario through a proxy that adds alice's
// key (the suite's CLI sends no headers of its own) and requires SUCCESS
// of every check, not just exit 0: the suite rates SHOULDs as WARNING and
// exits 0 on them, and SKIPPED means a check did not run.
func testConformance(t *testing.T, node nodeEnv, s *clientServer) {
	proxy := s.bearerProxy(t, s.alice)
	for _, run := range conformanceRuns {
		t.Run(run.spec+"/"+run.scenario, func(t *testing.T) {
			checks := node.conformance(t, proxy, run.spec, run.scenario)
			if len(checks) == 0 {
				t.Fatal("no checks reported")
			}
			for _, c := range checks {
				want := "SUCCESS"
				if g, ok := knownGaps[c.ID]; ok {
					want = g
				}
				if c.Status != want {
					t.Errorf("check %s: %s, want %s: %s", c.ID, c.Status, want, c.ErrorMessage)
				}
			}
		})
	}
}

// readText reads uri and returns its one text content and MIME type.
func readText(t *testing.T, c *nodeClient, uri string) (string, string) {
	t.Helper()
	var r struct {
		Contents []struct {
			URI, Text, MIMEType string
		} `json:"contents"`
	}
	c.okInto(t, "read", map[string]any{"uri": uri}, &r)
	if len(r.Contents) != 1 || r.Contents[0].URI != uri {
		t.Fatalf("read %s: %+v", uri, r.Contents)
	}
	return r.Contents[0].Text, r.Contents[0].MIMEType
}

// nodeEnv is where the clients live and the PATH that finds Node 22 first.
type nodeEnv struct {
	dir  string // .ci/clients, absolute
	path string // PATH for the children: dir/node_modules/.bin first
}

// findNode finds .ci/clients with its packages installed and Node >= 22
// (from PATH, node_modules/.bin first). Without them the test skips, unless
// MUNIN_REQUIRE_NODE=1 (CI) makes that a failure.
func findNode(t *testing.T) nodeEnv {
	t.Helper()
	missing := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...) + "; run `npm ci` in .ci/clients (it installs node 22.23.3 too)"
		if os.Getenv("MUNIN_REQUIRE_NODE") == "1" {
			t.Fatal(msg + " (MUNIN_REQUIRE_NODE=1)")
		}
		t.Skip(msg)
	}
	dir, err := filepath.Abs(filepath.Join(".ci", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"conformance", "mcp-inspector"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", bin)); err != nil {
			missing("%s is not installed in %s", bin, dir)
		}
	}
	env := nodeEnv{dir: dir, path: filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
	cmd := exec.Command("node", "--version")
	cmd.Env = env.environ()
	// exec.Command looks node up in this process's PATH; the child's Env
	// does not change that, so look it up in the children's PATH.
	if p, err := lookPath("node", env.path); err == nil {
		cmd.Path = p
	}
	out, err := cmd.Output()
	v := strings.TrimSpace(string(out))
	var major int
	if err != nil || func() bool { _, e := fmt.Sscanf(v, "v%d.", &major); return e != nil }() || major < 22 {
		missing("node 22 or newer is needed, found %q (%v)", v, err)
	}
	t.Logf("node %s, clients in %s", v, dir)
	return env
}

// environ is this process's environment with the children's PATH.
func (e nodeEnv) environ() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+e.path, "NO_COLOR=1")
}

// lookPath finds file in the directories of path.
func lookPath(file, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, file)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
