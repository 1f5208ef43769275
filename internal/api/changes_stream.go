package api

import (
	"errors"
	"net/http"
	"strconv"

	"munin/internal/changestream"
	"munin/internal/memory"
	"munin/internal/service"
)

// NewWithStreams is New with the change streams shared with other
// transports (the web UI), so that a key's streams are counted together.
func NewWithStreams(svc *service.Service, streams *changestream.Streams) http.Handler {
	return newHandler(svc, streams)
}

// defaultStreams are the change streams of a handler made by New, with the
// default limits.
func defaultStreams(svc *service.Service) *changestream.Streams {
	return changestream.New(svc, changestream.Options{})
}

// changeStream: GET /changes/stream → server-sent events, one per change of
// the caller's projects (id: the cursor after it, event: change, data: the
// change as in GET /changes), from Last-Event-ID or ?since= (empty: from
// the beginning), else from now.
// An invalid cursor is 400 before the stream starts, a key or project over
// its open streams 429.
func (h *handler) changeStream(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	return ServeChangeStream(h.streams, w, r, c)
}

// ServeChangeStream serves one change stream of c, answering a refusal
// before the stream starts as the REST API does: 429 with Retry-After over
// the stream limits, the error body otherwise. The web UI serves its
// project streams through it too.
func ServeChangeStream(streams *changestream.Streams, w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	err := streams.Serve(w, r, c)
	var refused *changestream.RefusedError
	if errors.As(err, &refused) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(refused.RetryAfter.Seconds()))))
		WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable, refused.Message)
		return nil
	}
	return err
}
