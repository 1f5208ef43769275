package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// Owner is what a node checks before it serves a forwarded call: that it
// owns the workspace at the epoch the caller routed by. An error (ErrMoved
// for "not at that epoch") refuses the call.
type Owner func(ctx context.Context, workspace string, epoch int64) error

// ServerOptions configures Handler.
type ServerOptions struct {
	// Secret is the cluster secret callers must present.
	Secret string
	// Node names this node in error messages (its advertised URL).
	Node string
	// Owns checks ownership before each call.
	Owns   Owner
	Logger *slog.Logger
}

// handler serves one method: unless refused (ownership), it decodes the
// arguments, runs the method and encodes its answer or error.
type handler func(ctx context.Context, args io.Reader, refused error, node string, log *slog.Logger) ([]byte, error)

// Handler serves the internal calls of other nodes against this node's
// data store and search index.
func Handler(data Data, index service.Index, opts ServerOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	methods := dataMethods(data, index, opts.Logger)
	for name, h := range indexMethods(index) {
		methods[name] = h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "internal calls are POST", http.StatusMethodNotAllowed)
			return
		}
		if !authorized(r, opts.Secret) {
			http.Error(w, "internal calls need the cluster secret", http.StatusUnauthorized)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, PathPrefix)
		h, ok := methods[name]
		if !ok {
			http.Error(w, "no internal method "+name, http.StatusNotFound)
			return
		}
		claims, err := parseClaims(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != contentType {
			http.Error(w, fmt.Sprintf("internal calls are %s, not %q (wire version %d: a node of another Munin version?)", contentType, ct, WireVersion),
				http.StatusUnsupportedMediaType)
			return
		}
		var refused error
		for _, cl := range claims {
			if refused = opts.Owns(r.Context(), cl.Workspace, cl.Epoch); refused != nil {
				break
			}
		}
		body, err := h(r.Context(), http.MaxBytesReader(w, r.Body, maxCallBytes), refused, opts.Node, opts.Logger)
		if err != nil {
			opts.Logger.Error("encode internal answer", "method", name, "err", err)
			http.Error(w, "encode answer", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	})
}

// reply is the answer of every call: the method's result or its error.
type reply[R any] struct {
	Val R
	Err *wireError
}

// serve registers a method whose arguments are one A and whose answer is R.
func serve[A, R any](m map[string]handler, name string, f func(ctx context.Context, a A) (R, error)) {
	m[name] = func(ctx context.Context, args io.Reader, refused error, node string, log *slog.Logger) ([]byte, error) {
		var out reply[R]
		err := refused
		if err == nil {
			var a A
			if derr := decode(args, &a); derr != nil {
				err = memory.Errorf(memory.CodeInvalid, "internal call %s: arguments: %v", name, derr)
			} else {
				out.Val, err = f(ctx, a)
			}
		}
		if err != nil && memory.ErrorCode(err) == memory.CodeInternal && !errors.Is(err, ErrMoved) {
			log.Error("internal call", "method", name, "err", err)
		}
		out.Err = toWire(err, node)
		var buf bytes.Buffer
		if err := encode(&buf, out); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
}
