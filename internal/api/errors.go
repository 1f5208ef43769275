package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"munin/internal/memory"
)

// StatusOf is the one mapping from an error code to an HTTP status. The REST
// API, the HTTP middleware and the web UI all answer through it, so a code
// means the same status everywhere.
func StatusOf(code memory.Code) int {
	switch code {
	case memory.CodeInvalid:
		return http.StatusBadRequest
	case memory.CodeNotFound:
		return http.StatusNotFound
	case memory.CodeConflict:
		return http.StatusConflict
	case memory.CodeForbidden:
		return http.StatusForbidden
	case memory.CodeUnauthorized:
		return http.StatusUnauthorized
	case memory.CodeBudgetExhausted:
		return http.StatusTooManyRequests
	case memory.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case memory.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// ErrorBody is the JSON shape of every error response:
// {"error":{"code":"…","message":"…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody. Message is safe to show; internal
// causes are logged, never sent.
type ErrorDetail struct {
	Code    memory.Code `json:"code"`
	Message string      `json:"message"`
}

// AuthChallenge is the WWW-Authenticate value sent with every 401, as RFC 9110
// requires; it tells clients which scheme to use.
const AuthChallenge = `Bearer realm="munin"`

// WriteError answers err with the status of its code and the JSON error body.
// A 401 carries WWW-Authenticate (AuthChallenge unless one is set
// already), a 429 carries Retry-After. Errors that are
// not a *memory.Error are logged here because no layer below has logged them.
func WriteError(w http.ResponseWriter, err error) {
	code := memory.ErrorCode(err)
	if code == "" {
		code = memory.CodeInternal
	}
	var me *memory.Error
	if !errors.As(err, &me) {
		slog.Default().Error("unexpected error in HTTP handler", "err", err)
	}
	switch code {
	case memory.CodeUnauthorized:
		if w.Header().Get("WWW-Authenticate") == "" { // the front door may have named an OAuth challenge
			w.Header().Set("WWW-Authenticate", AuthChallenge)
		}
	}
	if me != nil && me.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(me.RetryAfter.Seconds()))))
	}
	status := StatusOf(code)
	var se statusError
	if errors.As(err, &se) {
		status = se.status
	}
	WriteErrorStatus(w, status, code, publicMessage(err))
}

// statusError gives an error a status that its code does not map to (415 for
// a body that is not JSON, which is still code invalid).
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// WriteErrorStatus writes the JSON error body with an explicit status, for the
// few answers that have no code of their own (415, 405, 413 before a read).
func WriteErrorStatus(w http.ResponseWriter, status int, code memory.Code, message string) {
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: message}})
}

// publicMessage is memory.PublicMessage without the "code: " prefix, since the
// code travels in its own field.
func publicMessage(err error) string {
	var me *memory.Error
	if !errors.As(err, &me) || me.Code == memory.CodeInternal {
		return "internal error"
	}
	if me.Message == "" {
		return string(me.Code)
	}
	return me.Message
}

// writeJSON writes v as the response. Memory content is private to a project,
// so no proxy or browser may cache it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The status is out; all we can do is note the broken connection.
		slog.Default().Debug("write JSON response", "err", err)
	}
}
