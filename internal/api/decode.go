package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"munin/internal/memory"
)

// fallbackMaxBody bounds a request body when the API is mounted without the
// httpserver middleware (which applies the configured, smaller cap first).
const fallbackMaxBody = 8 << 20

// decodeJSON reads exactly one JSON object of the request into dst, strictly:
// no query parameters (a JSON body carries everything), application/json
// only, no unknown fields, no trailing data. Its error names the problem
// (answered as 400, 413 or 415).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if _, err := readParams(r); err != nil {
		return err
	}
	if err := checkContentType(r); err != nil {
		return statusError{status: http.StatusUnsupportedMediaType, err: memory.Errorf(memory.CodeInvalid, "%s", err)}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, fallbackMaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		// A second value (or garbage) after the object is a malformed request,
		// not something to ignore silently.
		var extra json.RawMessage
		if err2 := dec.Decode(&extra); !errors.Is(err2, io.EOF) {
			err = errTrailing
		}
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return memory.Errorf(memory.CodeTooLarge, "request body exceeds %d bytes", tooBig.Limit)
		}
		return memory.Errorf(memory.CodeInvalid, "%s", describeJSONError(err))
	}
	return nil
}

var errTrailing = errors.New("request body must be exactly one JSON value; found more after it")

// checkContentType accepts application/json with optional parameters (charset).
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return errors.New("missing Content-Type: send application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q is not supported: send application/json", ct)
	}
	return nil
}

// describeJSONError turns a decoder error into a message that names the field
// or position, without echoing Go type names a client cannot act on.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "request body is empty: send a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "request body is truncated JSON"
	case errors.As(err, &syntax):
		return fmt.Sprintf("request body is not valid JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("request body must be a JSON object, got %s", typ.Value)
		}
		return fmt.Sprintf("field %q must be %s, got %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.Is(err, errTrailing):
		return err.Error()
	}
	// The decoder reports unknown fields as `json: unknown field "x"`.
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + msg
	}
	return "request body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names a Go type the way the JSON contract does.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a different type"
}

// params reads query parameters strictly: unknown or repeated ones are an
// error, so a typo like ?limt=5 is reported instead of silently ignored.
type params struct {
	v url.Values
}

func readParams(r *http.Request, allowed ...string) (params, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return params{}, memory.Errorf(memory.CodeInvalid, "query string is malformed: %v", err)
	}
	for name, vals := range v {
		if !slices.Contains(allowed, name) {
			if len(allowed) == 0 {
				return params{}, memory.Errorf(memory.CodeInvalid, "unknown query parameter %q: this endpoint takes none", name)
			}
			return params{}, memory.Errorf(memory.CodeInvalid, "unknown query parameter %q (allowed: %s)", name, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return params{}, memory.Errorf(memory.CodeInvalid, "query parameter %q is given %d times; give it once", name, len(vals))
		}
	}
	return params{v: v}, nil
}

// str returns a parameter's value ("" when absent).
func (p params) str(name string) string { return p.v.Get(name) }

// int returns an integer parameter, 0 when absent or empty.
func (p params) int(name string) (int, error) {
	n, _, err := p.optInt(name)
	return n, err
}

// optInt returns an integer parameter and whether it was given.
func (p params) optInt(name string) (int, bool, error) {
	s := p.v.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false, memory.Errorf(memory.CodeInvalid, "query parameter %s must be an integer, got %q", name, s)
	}
	return n, true, nil
}

// list splits a comma-separated parameter ("a,b") into its non-empty items.
func (p params) list(name string) []string {
	out := []string{}
	for _, s := range strings.Split(p.v.Get(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
