// Package remote carries the data half of the service's storage and its
// search index between the nodes of a cluster: a node that does not own a
// workspace forwards each data call to the node that does.
//
// A call is one POST to /internal/v1/call/<Method> on the owner, its
// arguments and its answer encoded as JSON (encoding/json; gob compiled its
// types anew for every call, eight times the CPU). The few fields the
// transports' JSON leaves out (`json:"-"`: WriteResult.Replayed,
// Hit.Project) cross the hop in wire types beside them (methods.go).
// The caller names the workspace and the epoch of the ownership it routed
// by; the owner serves the call only while it owns the workspace at that
// epoch, and otherwise answers "moved", which the caller's router takes as
// a reason to look up the owner again. Errors keep their code (memory.Error)
// across the hop; internal details stay in the owner's log.
//
// The calls are authenticated with the cluster secret, which every node
// shares and no client holds.
package remote

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"munin/internal/memory"
)

// PathPrefix is where the internal calls are served.
const PathPrefix = "/internal/v1/call/"

// headerClaim names, once per workspace a call touches, the workspace and
// the epoch the caller routed by: "<workspace>=<epoch>".
const headerClaim = "Munin-Owner-Claim"

const contentType = "application/json"

// WireVersion numbers the internal calls (their encoding and methods): 1
// was gob, 2 is JSON with BudgetUsage. It is part of the schema a node
// joins with, so nodes that could not talk are never in one cluster.
const WireVersion = 2

// maxCallBytes caps an internal call's body. The largest arguments are a
// write (content up to --max-content, which must fit the front door's 1 MiB
// cap, httpserver.DefaultMaxBodyBytes) and a chunk of search-log rows
// (node.go). Re-encoded as JSON a text grows at most threefold (a control
// byte or U+2028 that came raw or form-encoded is sent as \uXXXX), so
// 4 MiB holds whatever the front door let in.
const maxCallBytes = 4 << 20

// encode writes v as a call's arguments or answer. HTML is not escaped:
// nothing here reaches a browser, and escaping <, > and & would send each
// as six bytes.
func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// decode reads what encode wrote.
func decode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// ErrMoved means the node called does not own the workspace at the epoch the
// caller routed by: ownership moved (or is moving). Nothing was done.
var ErrMoved = errors.New("workspace moved to another owner")

// wireError is an error as it crosses the hop.
type wireError struct {
	Code       memory.Code
	Message    string
	RetryAfter int64 // nanoseconds
	Moved      bool
}

// toWire turns an error into what the caller may see: a memory.Error's code
// and message, "moved", or for anything else only that it was internal.
func toWire(err error, node string) *wireError {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrMoved) {
		return &wireError{Code: memory.CodeUnavailable, Message: err.Error(), Moved: true}
	}
	var me *memory.Error
	if errors.As(err, &me) {
		return &wireError{Code: me.Code, Message: me.Message, RetryAfter: int64(me.RetryAfter)}
	}
	return &wireError{Code: memory.CodeInternal, Message: "internal error on " + node}
}

// fromWire rebuilds the error on the caller's side. An internal error stays
// a plain error, so the caller's service logs it and answers "internal".
func (w *wireError) fromWire() error {
	switch {
	case w == nil:
		return nil
	case w.Moved:
		return fmt.Errorf("%w: %s", ErrMoved, w.Message)
	case w.Code == memory.CodeInternal:
		return errors.New(w.Message)
	}
	return &memory.Error{Code: w.Code, Message: w.Message, RetryAfter: time.Duration(w.RetryAfter)}
}

// authorized checks the cluster secret in constant time.
func authorized(r *http.Request, secret string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
}

// parseClaims reads the claims of a call; a call claims at least one.
func parseClaims(r *http.Request) ([]claim, error) {
	vals := r.Header.Values(headerClaim)
	if len(vals) == 0 {
		return nil, fmt.Errorf("internal call without %s", headerClaim)
	}
	claims := make([]claim, 0, len(vals))
	for _, v := range vals {
		ws, ep, ok := strings.Cut(v, "=")
		n, err := strconv.ParseInt(ep, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%s %q is not <workspace>=<epoch>", headerClaim, v)
		}
		if err := memory.ValidateName("workspace", ws); err != nil {
			return nil, err
		}
		claims = append(claims, claim{ws, n})
	}
	return claims, nil
}
