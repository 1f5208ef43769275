// Package reqlog is about what reaches the log. It carries facts learned
// deep inside a request — who the caller turned out to be — back out to the
// one log line the front door writes for it: the front door (httpserver)
// opens the record; whatever authenticates the caller (bearer key, web
// session) notes it. And its Safe handler, under the server's logger, keeps
// any logged text from carrying a key or forging a log field.
package reqlog

import "context"

// Info is what a request's log line learns from inside the handlers.
type Info struct {
	Agent   string
	Project string
	// Refused is why authentication refused the request, as the client was
	// told ("key 2 of 3 is unknown or revoked"): a position in the key
	// list, never a key or a project.
	Refused string
}

type infoKey struct{}

// infoContext carries a request's Info in the same allocation as the
// context that holds it (context.WithValue and a separate Info were two
// allocations on every request).
type infoContext struct {
	context.Context
	info Info
}

func (c *infoContext) Value(key any) any {
	if key == (infoKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

// With returns a context carrying a fresh Info, and that Info.
func With(ctx context.Context) (context.Context, *Info) {
	c := &infoContext{Context: ctx}
	return c, &c.info
}

// NoteCaller records the authenticated caller; without a record (a handler
// called outside the front door, as in tests) it does nothing.
func NoteCaller(ctx context.Context, agent, project string) {
	if info, ok := ctx.Value(infoKey{}).(*Info); ok {
		info.Agent, info.Project = agent, project
	}
}

// NoteRefused records why authentication refused the request; msg must be
// the public message (it names a key's position, never the key).
func NoteRefused(ctx context.Context, msg string) {
	if info, ok := ctx.Value(infoKey{}).(*Info); ok {
		info.Refused = msg
	}
}
