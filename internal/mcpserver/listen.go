package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// listenEndWrite bounds the write of the final listen result on a server
// shutdown: a client that stopped reading must not hold the drain.
const listenEndWrite = 5 * time.Second

// IsListen reports whether r opens a subscriptions/listen stream (protocol
// 2026-07-28): a POST whose answer is a stream as long-lived as the GET
// stream of the earlier protocols. It looks at the headers only, so the HTTP
// server can tell before it reads the body; the headers cannot lie about
// the body, since mcp-go refuses a request whose Mcp-Method differs from its
// method (400, -32020) and a modern request without the Mcp-Protocol-Version
// header.
func IsListen(r *http.Request) bool {
	return r.Method == http.MethodPost &&
		r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) &&
		mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// serveListen serves a subscriptions/listen request: the stream counts
// against the same per-key and per-project bounds as a GET stream
// (openListen), one more is refused with 429, and the stream ends when the
// client goes away, when the server closes (Close), or when the HTTP server
// shuts down (it cancels the request). mcp-go answers the listen request
// with its final result only when the request's context is still live, so
// the gate writes that result itself when the server ended the stream.
func (g gate) serveListen(w http.ResponseWriter, r *http.Request) {
	id := listenRequestID(r)
	c, err := service.CallerFrom(r.Context())
	if err != nil {
		writeRPCErrorID(w, http.StatusUnauthorized, 0, id, "unauthorized: the request carries no key")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p := c.First().Project
	done, err := g.srv.ids.openListen(ownerOf(c), p, cancel)
	if err != nil {
		g.refuseListen(w, err, id, p)
		return
	}
	defer done()
	defer g.srv.watchRevocation()()
	// Proxies (nginx) would otherwise buffer the stream (2026-07-28,
	// Streamable HTTP: servers SHOULD send it on listen streams).
	w.Header().Set("X-Accel-Buffering", "no")
	lw := &listenWriter{ResponseWriter: w}
	stopKeepAlive := lw.keepAlive(g.srv.ids.checks.ListenKeepAlive, cancel)
	g.next.ServeHTTP(lw, r.WithContext(ctx))
	stopKeepAlive() // before the final result: nothing writes after it
	if ctx.Err() != nil && lw.streaming() && id != nil {
		endListen(w, id)
	}
}

// refuseListen answers a listen stream over its key's or its project's
// bound: 429 with Retry-After and a JSON-RPC error carrying the request's id.
func (g gate) refuseListen(w http.ResponseWriter, err error, id json.RawMessage, p memory.ProjectRef) {
	if err == errProjectStreamFull {
		writeRPCErrorID(w, http.StatusTooManyRequests, streamsRetryAfter, id, fmt.Sprintf(
			"unavailable: the keys of project %s already have %d open streams on %s (GET and subscriptions/listen; the project's limit); close one and retry in %s",
			projectLabel(p), g.srv.ids.projectStreams.Rule().InFlight, Endpoint, streamsRetryAfter))
		return
	}
	writeRPCErrorID(w, http.StatusTooManyRequests, streamsRetryAfter, id, fmt.Sprintf(
		"unavailable: a key of this request already has %d open streams on %s (GET and subscriptions/listen; its limit); close one and retry in %s",
		g.srv.ids.keyStreams.Rule().InFlight, Endpoint, streamsRetryAfter))
}

// listenRequestID is the JSON-RPC id of the request body (nil if it has none or
// is not JSON); the body is put back for mcp-go.
func listenRequestID(r *http.Request) json.RawMessage {
	body, ok := peekBody(r)
	if !ok {
		return nil
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return nil
	}
	return msg.ID
}

// endListen writes the listen request's final result as the last event of
// its stream, the way mcp-go ends a listen whose filter is empty: the
// client learns that the server closed the subscription (2026-07-28,
// subscriptions: "graceful"), rather than seeing the connection drop. A
// client that is gone or stopped reading only makes the write fail.
func endListen(w http.ResponseWriter, id json.RawMessage) {
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"result": map[string]any{
			"resultType": "complete",
			"_meta":      map[string]any{mcp.MetaKeySubscriptionID: id},
		},
	})
	if err != nil {
		return // cannot happen: an id that was valid JSON
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(listenEndWrite))
	if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg); err == nil {
		_ = rc.Flush()
	}
}

// listenKeepAliveLine is the keep-alive of a listen stream: an SSE comment,
// which clients skip (2026-07-28, Streamable HTTP, encourages them).
const listenKeepAliveLine = ": ping\n\n"

// listenWriter notes whether mcp-go turned the listen answer into an event
// stream (it did once it sent the acknowledgement), so that the final result
// is only ever written as one more event of it. It also serializes mcp-go's
// writes with the keep-alive comments: every Write, Flush and keep-alive
// holds mu (an http.ResponseWriter is not safe for concurrent use), and a
// comment is written only where an event ended, never inside one.
type listenWriter struct {
	http.ResponseWriter
	mu  sync.Mutex
	sse bool
	// tail is the last two bytes written (fewer while fewer were): an
	// event ends with an empty line, "\n\n".
	tail []byte
}

func (l *listenWriter) WriteHeader(code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sse = code == http.StatusOK && l.Header().Get("Content-Type") == "text/event-stream"
	l.ResponseWriter.WriteHeader(code)
}

// Write passes b on and notes where it ended.
func (l *listenWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.ResponseWriter.Write(b)
	l.tail = append(l.tail, b[:n]...)
	if len(l.tail) > 2 {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-2:]...)
	}
	return n, err
}

func (l *listenWriter) streaming() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sse
}

// Flush serves mcp-go, which streams only to an http.Flusher.
func (l *listenWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// betweenEvents reports whether the stream is open and its last event is
// complete (nothing written yet counts as complete). Called with mu held.
func (l *listenWriter) betweenEvents() bool {
	return l.sse && (len(l.tail) == 0 || string(l.tail) == "\n\n")
}

// ping writes one keep-alive comment if the stream is between events (else
// an event is being written: the next tick comes soon enough). The write
// gets listenEndWrite to reach the client; an error means the client is gone
// or stopped reading.
func (l *listenWriter) ping() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.betweenEvents() {
		return nil
	}
	rc := http.NewResponseController(l.ResponseWriter)
	_ = rc.SetWriteDeadline(time.Now().Add(listenEndWrite))
	// A stream has no write deadline (httpserver's streaming clears it).
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	if _, err := io.WriteString(l.ResponseWriter, listenKeepAliveLine); err != nil {
		return err
	}
	return rc.Flush()
}

// keepAlive writes a keep-alive comment every interval until stop is
// called; stop returns once no more can be written. A keep-alive that
// cannot be written ends the stream (end): its client is gone or stuck. A
// timer rather than a goroutine per stream: between keep-alives an open
// listen stream holds no more than the timer.
func (l *listenWriter) keepAlive(every time.Duration, end context.CancelFunc) (stop func()) {
	var (
		mu      sync.Mutex // held while a keep-alive is written
		stopped bool
		timer   *time.Timer
	)
	mu.Lock() // the first tick waits until timer is set
	defer mu.Unlock()
	timer = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if err := l.ping(); err != nil {
			end()
			return
		}
		timer.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// Unwrap serves http.ResponseController.
func (l *listenWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }
