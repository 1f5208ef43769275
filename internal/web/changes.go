package web

import (
	"net/http"

	"munin/internal/api"
	"munin/internal/changestream"
	"munin/internal/memory"
	"munin/internal/service"
)

// changeStream: GET /w/{ws}/p/{p}/changes/stream — the live stream of a
// project page (static/app.js listens to it): the changes of this project
// as the session's key for it may see them, in the REST stream's format
// and with its limits (api.ServeChangeStream; the streams are shared with
// the REST API, so a key's streams count together). A project the session
// holds no key for answers as a missing one, as its page does.
func (h *Handler) changeStream(w http.ResponseWriter, r *http.Request) {
	rq, err := h.signedIn(r)
	if err != nil {
		h.renderError(w, r, nil, err)
		return
	}
	h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
		key, err := h.scoped(r, rq)
		if err == nil {
			// One key: the stream carries this project alone.
			err = api.ServeChangeStream(h.streams, w, r, memory.NewCaller(key))
		}
		if err != nil {
			h.renderError(w, r, rq, err)
		}
	})
}

// liveCursor is the feed's cursor of the present for key's project, taken
// when a project page is rendered: the page's stream starts there, so a
// change made while the page loads is announced too. Without it (the feed
// failed) the stream starts when it connects.
func (h *Handler) liveCursor(r *http.Request, key memory.Key) string {
	res, err := h.svc.Changes(r.Context(), memory.NewCaller(key), service.ChangesRequest{Since: service.SinceNow})
	if err != nil {
		return ""
	}
	return res.NextCursor
}

// streamsOr returns s, or the streams of svc's feed with the default limits.
func streamsOr(s *changestream.Streams, svc *service.Service) *changestream.Streams {
	if s != nil {
		return s
	}
	return changestream.New(svc, changestream.Options{})
}
