package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioKey is the registry key of the stdio session's resources/subscribe
// subscriptions: mcp-go keeps one stdio session per process, with this id.
const stdioKey = "stdio"

// sessionKey is the registry key of a 2025 HTTP session's subscriptions.
func sessionKey(id string) string { return "s:" + id }

// addHooks feeds the registry from mcp-go, which answers resources/subscribe,
// resources/unsubscribe and subscriptions/listen itself. Hooks cannot
// refuse a request: a resources/subscribe of a malformed munin URI is
// answered {} and ignored (resources/read of it names the problem), one
// past the bound drops the oldest; a listen's filter is cut down before
// mcp-go acknowledges it, so its acknowledgement lists exactly the URIs
// honoured.
func (r *subscriptions) addHooks(hooks *server.Hooks) {
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		r.afterSubscribe(ctx, req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if key, _, ok := r.sessionOf(ctx); ok {
			r.unsubscribe(key, req.Params.URI, true)
		}
	})
	hooks.AddBeforeSubscriptionsListen(r.beforeListen)
	// The stdio session ends with ServeStdio. A 2025 HTTP session ends
	// through sessionIDs.onEnd (server.go), the one record of live
	// sessions, whichever way it ends.
	hooks.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		if sess.SessionID() == stdioKey {
			r.drop(stdioKey)
		}
	})
}

// sessionOf is the registry key of the 2025 session ctx belongs to, and
// its HTTP session id ("" over stdio).
func (r *subscriptions) sessionOf(ctx context.Context) (key, httpID string, ok bool) {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return "", "", false
	}
	if _, stdio := ctx.Value(stdioAuthKey{}).(stdioAuth); stdio {
		return stdioKey, "", true
	}
	if sess.SessionID() == "" {
		return "", "", false
	}
	return sessionKey(sess.SessionID()), sess.SessionID(), true
}

// afterSubscribe records a 2025 resources/subscribe. The session's caller
// is the request's (the gate lets a session id in only with the keys that
// opened it). A 2025 subscriber hears list_changed for the projects it
// subscribes to something in.
func (r *subscriptions) afterSubscribe(ctx context.Context, uri string) {
	key, httpID, ok := r.sessionOf(ctx)
	if !ok {
		return
	}
	c, err := callerOf(ctx)
	if err != nil {
		return
	}
	sess := server.ClientSessionFromContext(ctx)
	r.subscribe(key, func() *subscriber {
		s := &subscriber{key: key, caller: c, sessionID: httpID, listChanged: true, ready: true}
		if httpID == "" {
			s.ch = sess.NotificationChannel()
		}
		return s
	}, uri)
	// The session may have ended while this request ran; its onEnd then
	// found nothing to drop.
	if httpID != "" && r.live != nil && !r.live(httpID) {
		r.drop(key)
	}
}

// beforeListen registers a subscriptions/listen stream (2026-07-28) before
// mcp-go acknowledges it, and drops it when the request's context ends
// (the client closed the stream, sent notifications/cancelled, the server
// closed it) — mcp-go cancels that context whenever the handler returns,
// so no path leaves the stream registered.
func (r *subscriptions) beforeListen(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil || id == nil {
		return
	}
	c, err := callerOf(ctx)
	if err != nil {
		return
	}
	f := &req.Params.Notifications
	uris := make([]string, 0, min(len(f.ResourceSubscriptions), MaxSubscriptionsPerSession))
	seen := make(map[string]bool, cap(uris))
	for _, u := range f.ResourceSubscriptions {
		if len(uris) == MaxSubscriptionsPerSession {
			break
		}
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		if strings.HasPrefix(u, resourceScheme) {
			if _, _, err := parseResourceURI(u); err != nil {
				continue // malformed: not honoured, so not acknowledged
			}
		}
		uris = append(uris, u)
	}
	f.ResourceSubscriptions = uris
	if len(uris) == 0 && !f.ResourcesListChanged {
		return
	}
	key := fmt.Sprintf("l:%d", r.listens.Add(1))
	s := &subscriber{key: key, caller: c, ch: sess.NotificationChannel(), listChanged: f.ResourcesListChanged}
	if _, stdio := ctx.Value(stdioAuthKey{}).(stdioAuth); stdio {
		s.tag = id // mcp-go tags the HTTP listen's notifications, not stdio's
	}
	r.mu.Lock()
	r.addLocked(s)
	start := r.listenProjectsLocked(s, uris)
	r.mu.Unlock()
	r.startWatches(s, start)
	context.AfterFunc(ctx, func() { r.drop(key) })
}

// listenProjectsLocked records a new listen subscriber's URIs and, if it
// asked for list_changed, every project of its caller; it returns the
// projects to watch.
func (r *subscriptions) listenProjectsLocked(s *subscriber, uris []string) []newWatch {
	var start []newWatch
	for _, u := range uris {
		s.seq++
		s.uris[u] = s.seq
		start = append(start, r.addURILocked(s, u)...)
	}
	if !s.listChanged {
		return start
	}
	for _, ref := range s.caller.Projects() {
		if w := s.projects[ref]; w != nil {
			w.all = true
			continue
		}
		w := &watched{slugs: map[string]struct{}{}, all: true}
		s.projects[ref] = w
		start = append(start, newWatch{ref, w})
	}
	return start
}
