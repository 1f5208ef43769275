package changestream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"munin/internal/memory"
)

// finalWriteTimeout bounds the last event of a stream (resync or failure): a
// client that is gone or stuck must not hold the handler for a whole
// WriteTimeout once more.
const finalWriteTimeout = time.Second

// stream is one client's stream: its cursor and its connection.
type stream struct {
	s  *Streams
	w  http.ResponseWriter
	rc *http.ResponseController
	c  memory.Caller
	// cursor is where the next read starts: after the last change put into
	// an event. delivered is the cursor of the last event written to the
	// client's socket (what resync tells it).
	cursor, delivered string
	buf               bytes.Buffer
	// unavailable is the set of projects last reported in an unavailable
	// event (their names, one per line); "" while every project is read.
	unavailable string
}

// read reads the page after the cursor, with the cursor after each of its
// changes. A page without changes moves the cursor to its next_cursor
// ("now" becomes a cursor the client can resume from).
func (st *stream) read(ctx context.Context) (*Result, error) {
	page, err := st.s.changes(ctx, st.c, Request{Since: st.cursor, Limit: st.s.opts.PageSize, PerChange: true})
	if err != nil {
		return nil, err
	}
	if len(page.Changes) == 0 {
		st.cursor = page.NextCursor
	}
	return &page, nil
}

// start sends the headers and the start cursor as a bare id (no event): an
// EventSource keeps it as its last event id, so a client that connected
// with "now" and reconnects before any change resumes from where it
// started, not from a later "now".
func (st *stream) start() error {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// nginx buffers responses by default, which would hold events back.
	h.Set("X-Accel-Buffering", "no")
	st.delivered = st.cursor
	st.buf.Reset()
	// A stream from the beginning has no cursor yet: an empty id would
	// only reset the client's.
	if st.cursor != "" {
		if err := writeID(&st.buf, st.cursor); err != nil {
			return err
		}
		st.buf.WriteString("\n")
	}
	return st.write(st.buf.Bytes())
}

// send writes the changes of page as one event each, in one write. The id of
// an event is the cursor after its change, which the feed gives with the
// page (Request.PerChange): a page costs one read however many changes it
// holds.
func (st *stream) send(page *Result) error {
	if len(page.Changes) == 0 {
		return nil
	}
	if len(page.Cursors) != len(page.Changes) {
		return memory.Internal(fmt.Errorf("the feed gave %d cursors for %d changes", len(page.Cursors), len(page.Changes)))
	}
	st.buf.Reset()
	for i, ch := range page.Changes {
		if err := writeEvent(&st.buf, page.Cursors[i], ch); err != nil {
			return err
		}
	}
	cursor := page.Cursors[len(page.Cursors)-1]
	st.cursor = cursor
	err := st.write(st.buf.Bytes())
	if st.buf.Cap() > maxIdleBuffer {
		// A full page is tens of kilobytes; an idle stream keeps none of it.
		st.buf = bytes.Buffer{}
	}
	if err != nil {
		return err
	}
	st.delivered = cursor
	return nil
}

// noteUnavailable tells the client when the projects the feed could not
// read change (Result.Unavailable): an event unavailable with the list, and
// one with an empty list once every project is read again. The stream goes
// on with the others meanwhile, and the cursors it sends keep the
// unavailable projects' positions, so their changes come once they are
// read again. The event has no id: the client's last event id stays the
// cursor after its last change.
func (st *stream) noteUnavailable(page *Result) error {
	var key strings.Builder
	for _, u := range page.Unavailable {
		key.WriteString(u.Project)
		key.WriteString("\n")
	}
	if key.String() == st.unavailable {
		return nil
	}
	st.unavailable = key.String()
	data, err := json.Marshal(unavailableData{Unavailable: append([]Unavailable{}, page.Unavailable...)})
	if err != nil {
		return memory.Internal(err)
	}
	var b bytes.Buffer
	b.WriteString("event: unavailable\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return st.write(b.Bytes())
}

// unavailableData is the data of an unavailable event, the field of
// GET /api/v1/changes.
type unavailableData struct {
	Unavailable []Unavailable `json:"unavailable"`
}

// maxIdleBuffer is the most buffer a stream keeps between pages: enough for
// a few events, so that the common single change allocates nothing.
const maxIdleBuffer = 4 << 10

// keysValid checks that every key of the caller is still valid: a stream
// outlives the request that authenticated it, and a revoked key must stop
// hearing about its project.
func (st *stream) keysValid(ctx context.Context) error {
	for _, k := range st.c.Keys() {
		if _, err := st.s.feed.KeyByID(ctx, k.ID); err != nil {
			if memory.ErrorCode(err) == memory.CodeUnauthorized {
				return memory.Errorf(memory.CodeUnauthorized, "key %d (%s) was revoked; the stream ends", k.ID, k.Agent)
			}
			return err
		}
	}
	return nil
}

// write writes b and flushes it, within the write timeout: a client that
// does not read fills its socket buffers, and the write then fails at the
// deadline instead of blocking the handler for good.
func (st *stream) write(b []byte) error {
	return st.writeWithin(b, st.s.opts.WriteTimeout)
}

func (st *stream) writeWithin(b []byte, d time.Duration) error {
	// An error means the writer cannot set deadlines (a test recorder); it
	// then keeps the server's own write timeout.
	_ = st.rc.SetWriteDeadline(time.Now().Add(d))
	if _, err := st.w.Write(b); err != nil {
		return writeErr{err}
	}
	if err := st.rc.Flush(); err != nil {
		return writeErr{err}
	}
	return nil
}

// end ends the stream after cause. A stream ended by the server (shutdown)
// or by the feed tells the client so in a last event: resync with the last
// cursor delivered, or failure with the feed's code. The last event is a try
// within finalWriteTimeout: after a failed write (a stuck or gone client)
// net/http's buffered writer keeps the error and sends nothing more — such
// a client reconnects with the id of the last event it did read.
func (st *stream) end(ctx context.Context, cause error) {
	st.buf.Reset()
	switch {
	case errors.Is(cause, errShutdown) || ctxDone(ctx, cause) || isWriteError(cause):
		writeResync(&st.buf, st.delivered)
	default:
		if memory.ErrorCode(cause) == memory.CodeInternal {
			slog.Default().Error("change stream: feed failed", "err", cause)
		}
		writeError(&st.buf, cause)
	}
	_ = st.writeWithin(st.buf.Bytes(), finalWriteTimeout)
}

// writeErr marks errors of writing to the client.
type writeErr struct{ err error }

func (e writeErr) Error() string { return "write to client: " + e.err.Error() }
func (e writeErr) Unwrap() error { return e.err }

func isWriteError(err error) bool {
	var we writeErr
	return errors.As(err, &we)
}

// writeID writes an id field. A cursor is opaque but must be one line, or it
// would end the event early.
func writeID(b *bytes.Buffer, cursor string) error {
	if strings.ContainsAny(cursor, "\r\n") {
		return memory.Internal(errors.New("a cursor contains a line break"))
	}
	b.WriteString("id: ")
	b.WriteString(cursor)
	b.WriteString("\n")
	return nil
}

// writeEvent writes one change event: id, event type, the change as JSON.
func writeEvent(b *bytes.Buffer, cursor string, ch Change) error {
	if err := writeID(b, cursor); err != nil {
		return err
	}
	b.WriteString("event: change\ndata: ")
	data, err := json.Marshal(ch)
	if err != nil {
		return memory.Internal(err)
	}
	b.Write(data)
	b.WriteString("\n\n")
	return nil
}

// resyncData is the data of a resync event.
type resyncData struct {
	Cursor string `json:"cursor"`
}

// writeResync writes the event that asks the client to reconnect from
// cursor (with Last-Event-ID, or since=cursor).
func writeResync(b *bytes.Buffer, cursor string) {
	if writeID(b, cursor) != nil {
		return
	}
	data, _ := json.Marshal(resyncData{Cursor: cursor})
	b.WriteString("event: resync\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
}

// errorData is the data of a failure event, the REST API's error detail.
type errorData struct {
	Code    memory.Code `json:"code"`
	Message string      `json:"message"`
}

// writeError writes the event that ends a stream the feed failed. It is
// named failure, not error: an EventSource hands a server event named
// error to its onerror listeners, where it looks like a dropped connection.
func writeError(b *bytes.Buffer, err error) {
	d := errorData{Code: memory.ErrorCode(err), Message: "internal error"}
	var me *memory.Error
	if errors.As(err, &me) && me.Code != memory.CodeInternal {
		d.Message = me.Message
	}
	data, _ := json.Marshal(d)
	b.WriteString("event: failure\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
}
