package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"munin/internal/changestream"
	"munin/internal/memory"
)

// The kinds of web routes, by what they need.
const (
	readsEntries = iota // entry pages and logs: any key of the project, never a server admin
	writesEntries
	administers // keys and settings: an admin of the project, or a server admin
	reviews     // approving and rejecting proposals: an admin of the project, never a server admin
)

// target is the project a route is aimed at, and a key of it to revoke.
type target struct {
	ref   memory.ProjectRef
	keyID int64
}

func (tg target) proj() string { return projectURL(tg.ref) }

// webRoute is one route of the web UI aimed at a target.
type webRoute struct {
	method, tmpl string // as registered in routes(), for the coverage check
	kind         int
	path         func(tg target) string
	form         func(tg target) url.Values
}

// projectRoutes lists every route that reads, changes or administers a
// project. TestRoleTableCoversEveryRoute keeps it complete.
var projectRoutes = []webRoute{
	{"GET", "/w/{ws}/p/{p}", readsEntries, func(tg target) string { return tg.proj() }, nil},
	{"GET", "/w/{ws}/p/{p}/e/{slug:.+}", readsEntries, func(tg target) string { return tg.proj() + "/e/plans" }, nil},
	{"GET", "/w/{ws}/p/{p}/audit", readsEntries, func(tg target) string { return tg.proj() + "/audit" }, nil},
	{"GET", "/w/{ws}/p/{p}/changes/stream", readsEntries, func(tg target) string { return tg.proj() + "/changes/stream" }, nil},
	{"GET", "/w/{ws}/p/{p}/searches", readsEntries, func(tg target) string { return tg.proj() + "/searches" }, nil},
	{"GET", "/w/{ws}/p/{p}/new", writesEntries, func(tg target) string { return tg.proj() + "/new" }, nil},
	{"GET", "/w/{ws}/p/{p}/edit/{slug:.+}", writesEntries, func(tg target) string { return tg.proj() + "/edit/plans" }, nil},
	{"POST", "/w/{ws}/p/{p}/save", writesEntries, func(tg target) string { return tg.proj() + "/save" },
		func(target) url.Values {
			return url.Values{"slug": {"fresh"}, "content": {"written by the caller"}, "expected_version": {"0"}}
		}},
	{"POST", "/w/{ws}/p/{p}/restore/{slug:.+}", writesEntries, func(tg target) string { return tg.proj() + "/restore/plans" },
		func(target) url.Values { return url.Values{"version": {"1"}} }},
	{"POST", "/w/{ws}/p/{p}/forget/{slug:.+}", writesEntries, func(tg target) string { return tg.proj() + "/forget/plans" },
		func(target) url.Values { return url.Values{} }},
	{"GET", "/w/{ws}/p/{p}/settings", administers, func(tg target) string { return tg.proj() + "/settings" }, nil},
	{"POST", "/w/{ws}/p/{p}/settings", administers, func(tg target) string { return tg.proj() + "/settings" },
		func(target) url.Values { return url.Values{"writes_per_hour": {"1"}} }},
	{"POST", "/w/{ws}/p/{p}/settings/review", administers, func(tg target) string { return tg.proj() + "/settings/review" },
		func(target) url.Values { return url.Values{"review": {"agents"}} }},
	{"POST", "/w/{ws}/p/{p}/settings/similar", administers, func(tg target) string { return tg.proj() + "/settings/similar" },
		func(target) url.Values { return url.Values{"similar": {"off"}} }},
	{"GET", "/w/{ws}/p/{p}/review", readsEntries, func(tg target) string { return tg.proj() + "/review" }, nil},
	{"GET", "/w/{ws}/p/{p}/review/{n:[0-9]+}", readsEntries, func(tg target) string { return tg.proj() + "/review/1" }, nil},
	{"GET", "/w/{ws}/p/{p}/review/{n:[0-9]+}/edit", reviews, func(tg target) string { return tg.proj() + "/review/1/edit" }, nil},
	// Proposal 1 proposes the new entry "ideas", 2 the new entry "more-ideas" (newRoleWorld).
	{"POST", "/w/{ws}/p/{p}/review/{n:[0-9]+}/approve", reviews, func(tg target) string { return tg.proj() + "/review/1/approve" },
		func(target) url.Values { return url.Values{"expected_version": {"0"}} }},
	{"POST", "/w/{ws}/p/{p}/review/{n:[0-9]+}/reject", reviews, func(tg target) string { return tg.proj() + "/review/2/reject" },
		func(target) url.Values { return url.Values{"reason": {"not now"}} }},
	{"GET", "/keys", administers, func(target) string { return "/keys" }, nil},
	{"POST", "/keys", administers, func(target) string { return "/keys" },
		func(tg target) url.Values {
			return url.Values{"workspace": {tg.ref.Workspace}, "project": {tg.ref.Project}, "agent": {"mallory"}, "role": {"admin"}}
		}},
	{"POST", "/keys/{id:[0-9]+}/revoke", administers, func(tg target) string { return "/keys/" + itoa(tg.keyID) + "/revoke" }, nil},
}

// send runs route r against tg in browser b.
func (b *browser) send(r webRoute, tg target) (int, string) {
	b.t.Helper()
	if r.method == "GET" && strings.HasSuffix(r.tmpl, changestream.Suffix) {
		return b.open(r.path(tg)) // a stream that starts never ends by itself
	}
	if r.method == "GET" {
		return b.get(r.path(tg))
	}
	var form url.Values
	if r.form != nil {
		form = r.form(tg)
	}
	return b.post(r.path(tg), form)
}

// TestRoleTableCoversEveryRoute: a route that reaches a project or the keys
// and is missing from projectRoutes fails here, so the role tests below
// cannot silently skip it.
func TestRoleTableCoversEveryRoute(t *testing.T) {
	u := newUI(t)
	covered := map[string]bool{}
	for _, r := range projectRoutes {
		covered[r.method+" "+r.tmpl] = true
	}
	err := u.h.routes().(*mux.Router).Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, _ := route.GetPathTemplate()
		methods, _ := route.GetMethods()
		if !strings.HasPrefix(tmpl, "/w/") && !strings.HasPrefix(tmpl, "/keys") {
			return nil
		}
		if len(methods) == 0 || !covered[methods[0]+" "+tmpl] {
			t.Errorf("route %v %s is not in projectRoutes", methods, tmpl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// roleWorld is acme/alpha and other/gamma, each with an admin key, an
// entry "plans" of two versions and two pending proposals (1: a new entry
// "ideas", 2: a new entry "more-ideas"), and a server-admin key.
type roleWorld struct {
	u                      *ui
	alpha, gamma, nope     target
	alphaAdmin, gammaAdmin string
	gammaWriter            memory.Key
	server                 string
}

func newRoleWorld(t *testing.T) *roleWorld {
	t.Helper()
	u := newUI(t)
	w := &roleWorld{u: u}
	var c memory.Caller
	w.alphaAdmin, c = u.env.Key(t, "acme", "alpha", "alice", memory.RoleAdmin)
	k := c.First()
	w.alpha = target{ref: k.Project, keyID: k.ID}
	u.remember(t, k, "plans", "alpha's first plan")
	u.remember(t, k, "plans", "alpha's second plan")
	w.gammaAdmin, c = u.env.Key(t, "other", "gamma", "gus", memory.RoleAdmin)
	k = c.First()
	w.gamma = target{ref: k.Project, keyID: k.ID}
	_, c = u.env.Key(t, "other", "gamma", "gamma-bot", memory.RoleWrite)
	w.gammaWriter = c.First()
	u.remember(t, w.gammaWriter, "plans", "gamma's first secret")
	u.remember(t, w.gammaWriter, "plans", "gamma's second secret")
	for _, p := range []memory.ProjectRef{w.alpha.ref, w.gamma.ref} {
		_, c = u.env.Key(t, p.Workspace, p.Project, p.Project+"-proposer", memory.RolePropose)
		for _, slug := range []string{"ideas", "more-ideas"} {
			if res := u.remember(t, c.First(), slug, p.Project+"'s secret idea"); res.State != memory.ProposalPending {
				t.Fatalf("a propose key's remember: %+v, want a pending proposal", res)
			}
		}
	}
	w.nope = target{ref: memory.ProjectRef{Workspace: "other", Project: "nope"}, keyID: 99999}
	var err error
	if w.server, _, err = u.env.Svc.CreateServerAdminKey(context.Background(), "ops"); err != nil {
		t.Fatal(err)
	}
	return w
}

// gammaUntouched checks that nothing of other/gamma changed.
func (w *roleWorld) gammaUntouched(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if h, err := w.u.history(w.gammaWriter, "plans"); err != nil || len(h) != 2 {
		t.Errorf("gamma's plans has %d versions (%v), want 2", len(h), err)
	}
	if _, err := w.u.get(w.gammaWriter, "fresh"); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("an entry was written into gamma: %v", err)
	}
	if _, limit, _ := w.u.env.Svc.WriteUsage(ctx, w.gamma.ref); limit != 1000 {
		t.Errorf("gamma's budget is %d, want the default 1000", limit)
	}
	if _, err := w.u.env.Svc.Authenticate(ctx, w.gammaAdmin); err != nil {
		t.Errorf("gamma's admin key stopped working: %v", err)
	}
	if n, err := w.u.env.Svc.PendingCount(ctx, memory.NewCaller(w.gammaWriter), w.gamma.ref); err != nil || n != 0 {
		t.Errorf("gamma's writer has %d pending proposals (%v), want 0", n, err)
	}
	gus, err := w.u.env.Svc.Authenticate(ctx, w.gammaAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.u.env.Svc.PendingCount(ctx, gus, w.gamma.ref); err != nil || n != 2 {
		t.Errorf("gamma has %d pending proposals (%v), want its 2", n, err)
	}
	if review, err := w.u.env.Svc.ProjectReview(ctx, gus, w.gamma.ref); err != nil || review != memory.ReviewOff {
		t.Errorf("gamma's review setting %q (%v), want off", review, err)
	}
	keys, _ := w.u.env.Svc.ListKeys(ctx)
	for _, k := range keys {
		if k.Agent == "mallory" {
			t.Errorf("a key was created: %+v", k)
		}
	}
	projects, _ := w.u.env.Svc.ListProjects(ctx)
	for _, p := range projects {
		if p.Ref == w.nope.ref {
			t.Errorf("a refused call created %s", p.Ref)
		}
	}
}

// TestProjectAdminCannotReachAnotherProject: every route aimed at other/gamma
// by the admin of acme/alpha answers exactly as for a project that does not
// exist, and changes nothing.
func TestProjectAdminCannotReachAnotherProject(t *testing.T) {
	w := newRoleWorld(t)
	b := w.u.signIn(t, w.alphaAdmin)
	for _, r := range projectRoutes {
		code, body := b.send(r, w.gamma)
		_, missing := b.send(r, w.nope)
		if strings.Contains(body, "gamma's") || strings.Contains(body, "gus") || strings.Contains(body, "gamma-bot") {
			t.Errorf("%s %s shows gamma's content or keys", r.method, r.path(w.gamma))
		}
		if r.tmpl == "/keys" && r.method == "GET" {
			continue // not aimed at a project: it lists alpha's keys only (checked above)
		}
		missing = strings.ReplaceAll(missing, w.nope.ref.Project, w.gamma.ref.Project)
		missing = strings.ReplaceAll(missing, itoa(w.nope.keyID), itoa(w.gamma.keyID))
		if code != http.StatusNotFound || body != missing {
			t.Errorf("%s %s: %d, want the 404 of a missing project\n got: %s\nwant: %s", r.method, r.path(w.gamma), code, errorText(body), errorText(missing))
		}
	}
	if _, body := b.get("/"); strings.Contains(body, "gamma") {
		t.Error("alpha admin's overview lists other/gamma")
	}
	w.gammaUntouched(t)
}

// TestProjectAdminAdministersItsProject: the same routes, aimed at its own
// project, all work.
func TestProjectAdminAdministersItsProject(t *testing.T) {
	w := newRoleWorld(t)
	b := w.u.signIn(t, w.alphaAdmin)
	// A second key of alpha, for the revoke route (not the signed-in one).
	_, c := w.u.env.Key(t, "acme", "alpha", "second", memory.RoleAdmin)
	second := c.First()
	own := target{ref: w.alpha.ref, keyID: second.ID}
	for _, r := range projectRoutes {
		code, body := b.send(r, own)
		if code != http.StatusOK && code != http.StatusSeeOther {
			t.Errorf("%s %s by its admin: %d %s", r.method, r.path(own), code, errorText(body))
		}
	}
	ctx := context.Background()
	if _, limit, _ := w.u.env.Svc.WriteUsage(ctx, own.ref); limit != 1 {
		t.Errorf("alpha's budget %d, want 1", limit)
	}
	if _, err := w.u.env.Svc.Authenticate(ctx, w.alphaAdmin); err != nil {
		t.Errorf("alpha's admin key: %v", err)
	}
	keys, _ := w.u.env.Svc.ListKeys(ctx)
	var revoked, created bool
	for _, k := range keys {
		revoked = revoked || (k.ID == second.ID && k.Revoked)
		created = created || (k.Agent == "mallory" && k.Project == own.ref && k.Role == memory.RoleAdmin)
	}
	if !revoked || !created {
		t.Errorf("second key revoked %v, admin key created %v; want both", revoked, created)
	}
	_, body := b.get(projectURL(own.ref))
	if !strings.Contains(body, `id="tab-settings"`) || !strings.Contains(body, `id="nav-keys"`) {
		t.Error("the project admin does not see the Settings tab and the Keys link")
	}
}

// TestServerAdminAdministersButReadsNothing: a server-admin key sees every
// project's counts and keys and administers them, but every entry page and
// log is refused, and nothing of an entry is shown anywhere.
func TestServerAdminAdministersButReadsNothing(t *testing.T) {
	w := newRoleWorld(t)
	b := w.u.signIn(t, w.server)
	_, c := w.u.env.Key(t, "other", "gamma", "revoke-me", memory.RoleRead)
	bot := c.First()
	tg := target{ref: w.gamma.ref, keyID: bot.ID}
	for _, r := range projectRoutes {
		code, body := b.send(r, tg)
		if strings.Contains(body, "secret") {
			t.Errorf("%s %s shows gamma's content to the server admin", r.method, r.path(tg))
		}
		switch {
		case r.kind == administers && (code == http.StatusOK || code == http.StatusSeeOther):
		case r.kind != administers && code == http.StatusForbidden && strings.Contains(body, "server-admin"):
		default:
			t.Errorf("%s %s by the server admin: %d %s", r.method, r.path(tg), code, errorText(body))
		}
	}
	ctx := context.Background()
	if h, err := w.u.history(w.gammaWriter, "plans"); err != nil || len(h) != 2 {
		t.Errorf("gamma's plans has %d versions (%v), want 2", len(h), err)
	}
	if _, limit, _ := w.u.env.Svc.WriteUsage(ctx, tg.ref); limit != 1 {
		t.Errorf("gamma's budget %d, want 1", limit)
	}
	if _, err := w.u.env.Svc.Authenticate(ctx, w.gammaAdmin); err != nil {
		t.Errorf("gamma's admin key: %v", err)
	}
	// The overview lists every project, linked to its settings, with no content.
	_, body := b.get("/")
	for _, want := range []string{`href="/w/acme/p/alpha/settings"`, `href="/w/other/p/gamma/settings"`} {
		if !strings.Contains(body, want) {
			t.Errorf("server admin's overview lacks %s", want)
		}
	}
	if strings.Contains(body, "plan") {
		t.Error("server admin's overview shows content")
	}
	// Every key of the server, and a new workspace with its first key.
	if _, body := b.get("/keys"); !strings.Contains(body, "gus") || !strings.Contains(body, "alice") {
		t.Error("server admin's keys page lacks keys of some project")
	}
	if code, body := b.post("/keys", url.Values{"workspace": {"fresh"}, "project": {"one"}, "agent": {"x"}, "role": {"write"}}); code != http.StatusOK || regexpToken.FindString(body) == "" {
		t.Errorf("server admin creates a key in a new workspace: %d", code)
	}
	// Missing projects answer 404, as for everyone.
	if code, _ := b.get(projectURL(w.nope.ref) + "/settings"); code != http.StatusNotFound {
		t.Errorf("server admin GET settings of a missing project: %d, want 404", code)
	}
	// No entry tabs on the pages it can open.
	if _, body := b.get(projectURL(tg.ref) + "/settings"); strings.Contains(body, `id="tab-entries"`) || !strings.Contains(body, `id="tab-settings"`) {
		t.Error("server admin's settings page shows the entry tabs, or lacks the settings tab")
	}
}

// TestNoWebRouteMakesServerAdminKeys: the key form refuses the server-admin
// role for every admin, server admins included.
func TestNoWebRouteMakesServerAdminKeys(t *testing.T) {
	w := newRoleWorld(t)
	for _, token := range []string{w.alphaAdmin, w.server} {
		b := w.u.signIn(t, token)
		code, body := b.post("/keys", url.Values{"workspace": {"acme"}, "project": {"alpha"}, "agent": {"sneaky"}, "role": {"server-admin"}})
		if code != http.StatusBadRequest || !strings.Contains(body, "only the command line creates a server-admin key") {
			t.Errorf("POST /keys role=server-admin: %d %s", code, errorText(body))
		}
	}
	keys, _ := w.u.env.Svc.ListKeys(context.Background())
	n := 0
	for _, k := range keys {
		if k.ServerAdmin() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d server-admin keys, want the one the test made", n)
	}
}

// TestReadAndWriteKeysCannotOpenSettingsOrKeys: 403 on every admin route of
// their own project, and no Settings tab or Keys link.
func TestReadAndWriteKeysCannotOpenSettingsOrKeys(t *testing.T) {
	u := newUI(t)
	own := target{ref: ref, keyID: u.adminKey.ID}
	for _, token := range []string{u.reader, u.writer} {
		b := u.signIn(t, token)
		for _, r := range projectRoutes {
			if r.kind != administers {
				continue
			}
			if code, _ := b.send(r, own); code != http.StatusForbidden {
				t.Errorf("%s %s by a non-admin key: %d, want 403", r.method, r.path(own), code)
			}
		}
		_, body := b.get(projPath)
		if strings.Contains(body, "/settings") || strings.Contains(body, `href="/keys"`) {
			t.Error("a read or write key sees the Settings tab or the Keys link")
		}
	}
	if _, limit, _ := u.env.Svc.WriteUsage(context.Background(), ref); limit != 1000 {
		t.Errorf("budget %d, want the default 1000", limit)
	}
	if _, err := u.env.Svc.Authenticate(context.Background(), u.admin); err != nil {
		t.Errorf("the admin key was revoked: %v", err)
	}
}

// errorText is the error message of a page, for failure output.
func errorText(body string) string {
	if i := strings.Index(body, `id="error">`); i >= 0 {
		rest := body[i+len(`id="error">`):]
		if j := strings.Index(rest, "<"); j >= 0 {
			return rest[:j]
		}
	}
	if len(body) > 200 {
		return body[:200]
	}
	return body
}
