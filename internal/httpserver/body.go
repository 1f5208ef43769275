package httpserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"

	"munin/internal/api"
	"munin/internal/mcpserver"
	"munin/internal/memory"
)

// limitBody caps request bodies. A declared Content-Length over the cap is
// refused before a byte is read; an undeclared (chunked) body is wrapped in
// http.MaxBytesReader so reading past the cap fails, and bufferBody turns
// that failure into 413.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			tooLarge(w, max)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}

// refuseFunc answers a body that memory.CheckJSONText refused, in the
// route's protocol.
type refuseFunc func(w http.ResponseWriter, body []byte, err error)

// refuseREST answers 400 with the REST error body.
func refuseREST(w http.ResponseWriter, _ []byte, err error) { api.WriteError(w, err) }

// refuseRPC answers 400 with a JSON-RPC error (mcpserver.RefusedMessage),
// which MCP clients understand; mcp-go never sees the message.
func refuseRPC(w http.ResponseWriter, body []byte, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(mcpserver.RefusedMessage(body, err))
}

// bufferBody reads the whole (capped) body before the handler runs. Handlers
// like mcp-go's read the body themselves and would report a cap hit as a
// parse error (400) or worse; reading it here makes "too large" always 413.
// It runs after authentication, so only key holders can make the server
// hold a body in memory, and at most the cap. A body that CheckJSONText
// refuses (invalid UTF-8, a duplicate member name at any depth) is answered
// by refuse and never reaches the handler.
func bufferBody(refuse refuseFunc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		_, err := buf.ReadFrom(r.Body)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				tooLarge(w, tooBig.Limit)
				return
			}
			// The client hung up or timed out mid-body; nobody is left to
			// read a detailed answer.
			api.WriteError(w, memory.Errorf(memory.CodeInvalid, "reading the request body failed"))
			return
		}
		_ = r.Body.Close()
		if err := memory.CheckJSONText(buf.Bytes()); err != nil {
			refuse(w, buf.Bytes(), err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		r.ContentLength = int64(buf.Len())
		next.ServeHTTP(w, r)
	})
}

// tooLarge answers 413 and closes the connection: the rest of the body is
// still on the wire and not worth reading.
func tooLarge(w http.ResponseWriter, max int64) {
	w.Header().Set("Connection", "close")
	api.WriteError(w, memory.Errorf(memory.CodeTooLarge, "request body exceeds the limit of %s bytes", strconv.FormatInt(max, 10)))
}
