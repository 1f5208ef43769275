package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// csrfExempt are the state-changing routes that cannot carry a session's
// token: sign-in has no session yet (the cross-origin check guards it, see
// TestCrossOriginPostRefused).
var csrfExempt = map[string]bool{"POST /login": true}

// stateChangingRoutes walks the web UI's router and returns every route that
// takes a method other than GET or HEAD, as "METHOD template", with its
// URL built for entry "a", the reader's key and ws/proj.
func stateChangingRoutes(t *testing.T, u *ui) map[string]string {
	t.Helper()
	router, ok := u.h.routes().(*mux.Router)
	if !ok {
		t.Fatalf("routes() is a %T, not a *mux.Router", u.h.routes())
	}
	vars := []string{"ws", ws, "p", proj, "slug", "a", "id", itoa(u.readKey.ID), "file", "style.css", "n", "1"}
	out := map[string]string{}
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil { // no method matcher: the route takes any method
			methods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
		}
		path, err := route.URLPath(vars...)
		if err != nil {
			return fmt.Errorf("build %s: %w", tpl, err)
		}
		for _, m := range methods {
			if m != http.MethodGet && m != http.MethodHead {
				out[m+" "+tpl] = path.Path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryPostRouteNeedsCSRF: every state-changing route of the web UI,
// found by walking the router (so a new one is covered without editing this
// test), refuses a request without the session's CSRF token, with an empty
// one, a wrong one and another session's, with 403 naming CSRF, and changes
// nothing. With the right token the same form does its work, which shows
// the token is what stopped it.
func TestEveryPostRouteNeedsCSRF(t *testing.T) {
	const p = "/w/{ws}/p/{p}"
	// A form that succeeds for each known route; a route not listed is still
	// checked for the refusal, with an empty form.
	forms := map[string]url.Values{
		"POST /logout":                     {},
		"POST /keys":                       {"workspace": {ws}, "project": {proj}, "agent": {"csrf-probe"}, "role": {"read"}},
		"POST /keys/{id:[0-9]+}/revoke":    {},
		"POST " + p + "/save":              {"slug": {"a"}, "title": {""}, "tags": {""}, "content": {"changed"}, "expected_version": {"2"}, "is_new": {"0"}},
		"POST " + p + "/forget/{slug:.+}":  {"expected_version": {"2"}},
		"POST " + p + "/restore/{slug:.+}": {"version": {"1"}},
		"POST " + p + "/settings":          {"writes_per_hour": {"7"}},
		"POST " + p + "/settings/review":   {"review": {"agents"}},
		"POST " + p + "/settings/similar":  {"similar": {"off"}},
	}
	// Forms that need a key of another project: they get it, and their
	// path, from setup.
	setups := map[string]func(t *testing.T, u *ui, b *browser) (string, url.Values){
		"POST /session/keys": func(t *testing.T, u *ui, b *browser) (string, url.Values) {
			token, _ := u.newKey(t, ws, "other", "other-bot", memory.RoleRead)
			return "/session/keys", url.Values{"key": {token}}
		},
		"POST " + p + "/review/{n:[0-9]+}/approve": func(t *testing.T, u *ui, b *browser) (string, url.Values) {
			return projPath + "/review/" + proposeA(t, u) + "/approve", url.Values{"expected_version": {"2"}}
		},
		"POST " + p + "/review/{n:[0-9]+}/reject": func(t *testing.T, u *ui, b *browser) (string, url.Values) {
			return projPath + "/review/" + proposeA(t, u) + "/reject", url.Values{"reason": {"no"}}
		},
		"POST /session/keys/{id:[0-9]+}/remove": func(t *testing.T, u *ui, b *browser) (string, url.Values) {
			token, k := u.newKey(t, ws, "other", "other-bot", memory.RoleRead)
			if code, _ := b.addKey(token); code != http.StatusSeeOther {
				t.Fatalf("add key: %d", code)
			}
			return "/session/keys/" + itoa(k.ID) + "/remove", url.Values{}
		},
	}
	routes := stateChangingRoutes(t, newUI(t))
	if len(routes) < len(forms)+len(setups) {
		t.Fatalf("the router walk found %d state-changing routes, fewer than the %d known: %v", len(routes), len(forms), routes)
	}
	names := make([]string, 0, len(routes))
	for name := range routes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if csrfExempt[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			u := newUI(t)
			u.remember(t, u.writerKey, "a", "first")
			u.remember(t, u.writerKey, "a", "second")
			b := u.signIn(t, u.admin)
			other := u.signIn(t, u.writer)
			method, path := strings.Fields(name)[0], stateChangingRoutes(t, u)[name]
			form, known := forms[name]
			if setup, ok := setups[name]; ok {
				path, form = setup(t, u, b)
				known = true
			}
			wrong := "x" + b.csrf[1:]
			if b.csrf[0] == 'x' {
				wrong = "y" + b.csrf[1:]
			}
			before := u.snapshot(t, b)
			for tokenName, token := range map[string]string{"missing": "-", "empty": "", "wrong": wrong, "other session's": other.csrf} {
				f := url.Values{}
				for k, v := range form {
					f[k] = v
				}
				if token != "-" {
					f.Set("csrf", token)
				}
				resp, body := b.do(method, path, f)
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
					t.Errorf("%s token: %d, want 403 naming CSRF", tokenName, resp.StatusCode)
				}
				if after := u.snapshot(t, b); after != before {
					t.Fatalf("%s token changed the state:\nbefore %s\nafter  %s", tokenName, before, after)
				}
			}
			f := url.Values{"csrf": {b.csrf}}
			for k, v := range form {
				f[k] = v
			}
			resp, body := b.do(method, path, f)
			if resp.StatusCode == http.StatusForbidden && strings.Contains(body, "CSRF") {
				t.Fatalf("the right token is refused too: %d", resp.StatusCode)
			}
			if after := u.snapshot(t, b); known && after == before {
				t.Errorf("with the right token the form changed nothing (%d), so the refusals above prove nothing:\n%s", resp.StatusCode, after)
			}
		})
	}
	for name := range csrfExempt {
		if _, ok := routes[name]; !ok {
			t.Errorf("exempt route %s is gone; drop it from csrfExempt", name)
		}
	}
}

// snapshot describes everything a web form can change: entry "a", the
// keys, the budget, the review and similar settings, the proposals,
// whether b's session is alive, and its keys.
func (u *ui) snapshot(t *testing.T, b *browser) string {
	t.Helper()
	ctx := context.Background()
	hist, err := u.history(u.adminKey, "a")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := u.env.Store.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, k := range keys {
		ks = append(ks, fmt.Sprintf("%d:%s:%v", k.ID, k.Agent, k.Revoked))
	}
	_, limit, err := u.env.Svc.WriteUsage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	admin := memory.NewCaller(u.adminKey)
	review, err := u.env.Svc.ProjectReview(ctx, admin, ref)
	if err != nil {
		t.Fatal(err)
	}
	similar, err := u.env.Svc.ProjectSimilar(ctx, admin, ref)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := u.env.Svc.Proposals(ctx, admin, service.ProposalsRequest{Project: ref.String(), State: "all"})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, p := range ps.Proposals {
		states = append(states, p.ID+":"+p.State)
	}
	session, _ := b.get(projPath) // 200 signed in, 303 to sign-in otherwise
	return fmt.Sprintf("a: %d versions, latest deleted %v; keys %v; budget %d; review %s, similar %s, proposals %v; session %d with keys %v",
		len(hist), hist[0].Deleted, ks, limit, review, similar, states, session, u.sessionKeys(t, b))
}

// proposeA makes a propose key propose a third version of entry "a" and
// returns the proposal's number.
func proposeA(t *testing.T, u *ui) string {
	t.Helper()
	_, c := u.env.Key(t, ws, proj, "csrf-proposer", memory.RolePropose)
	res := u.remember(t, c.First(), "a", "proposed third")
	_, n, err := service.ParseProposalID(res.Proposal)
	if err != nil {
		t.Fatalf("propose: %+v, %v", res, err)
	}
	return itoa(n)
}

// sessionKeys returns the key ids of b's session (nil: none).
func (u *ui) sessionKeys(t *testing.T, b *browser) []int64 {
	t.Helper()
	for _, c := range b.c.Jar.Cookies(mustURL(t, u.srv.URL)) {
		if c.Name == cookieName {
			u.h.sessions.mu.Lock()
			defer u.h.sessions.mu.Unlock()
			if sess, ok := u.h.sessions.m[c.Value]; ok {
				return sess.keyIDs
			}
		}
	}
	return nil
}
