package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
)

// binder decodes one tool's arguments strictly: unknown names, wrong JSON
// types and missing required arguments become invalid errors that name the
// argument.
//
// It is the only check of a call's arguments: mcp-go's input schema
// validation is off (it decoded every call's arguments once more), so the
// binder refuses everything the input schema refuses — null where the
// schema has no null, null inside an array — which
// TestBinderRefusesWhatTheInputSchemaRefuses pins.
type binder[A any] struct {
	required []string        // JSON names of the fields without omitempty
	known    map[string]bool // every JSON name, spelled exactly
	// notNull are the fields whose schema type has no null (not pointers,
	// slices or maps), with that type as a client thinks of it; noNullItems
	// the arrays whose items are such values.
	notNull     []namedType
	noNullItems []namedType
}

// namedType is an argument's JSON name and its type for error texts.
type namedType struct{ name, kind string }

func newBinder[A any]() binder[A] {
	b := binder[A]{known: map[string]bool{}}
	t := reflect.TypeFor[A]()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		b.known[name] = true
		if !strings.Contains(opts, "omitempty") {
			b.required = append(b.required, name)
		}
		switch ft := t.Field(i).Type; {
		case !nullable(ft.Kind()):
			b.notNull = append(b.notNull, namedType{name, jsonTypeName(ft.Kind())})
		case ft.Kind() == reflect.Slice && !nullable(ft.Elem().Kind()):
			b.noNullItems = append(b.noNullItems, namedType{name, jsonTypeName(ft.Elem().Kind())})
		}
	}
	return b
}

// plural turns "a string" into "strings".
func plural(kind string) string {
	_, noun, _ := strings.Cut(kind, " ")
	return noun + "s"
}

// nullable says whether JSON null is a value of a Go kind (its schema
// type includes null).
func nullable(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Slice || k == reflect.Map || k == reflect.Interface
}

func (b binder[A]) bind(req mcp.CallToolRequest) (A, error) {
	var args A
	raw, err := rawArguments(req)
	if err != nil {
		return args, err
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = []byte("{}")
	}
	// memory.CheckJSONText (invalid UTF-8, duplicate names) has already
	// run on the whole message: httpserver's body buffer for /mcp, the stdio
	// reader for each line. It is not repeated here, as it costs a walk of
	// up to a megabyte.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return args, argumentError(err)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return args, memory.Errorf(memory.CodeInvalid, "arguments must be a JSON object")
	}
	// encoding/json matches names case-insensitively, so {"Slug": …} would
	// bind to slug (and of "slug" and "Slug" the last would win). Arguments
	// are spelled exactly as the schema says, or they are unknown.
	for name := range present {
		if !b.known[name] {
			return args, memory.Errorf(memory.CodeInvalid, "unknown argument %q", name)
		}
	}
	for _, name := range b.required {
		if v, ok := present[name]; !ok || string(v) == "null" {
			return args, memory.Errorf(memory.CodeInvalid, "missing argument %s", name)
		}
	}
	return args, b.refuseNulls(present)
}

// refuseNulls refuses null where the argument's schema has none: encoding/json
// would leave the zero value, as if the argument were not given.
func (b binder[A]) refuseNulls(present map[string]json.RawMessage) error {
	for _, f := range b.notNull {
		if string(present[f.name]) == "null" {
			return memory.Errorf(memory.CodeInvalid, "argument %s must be %s, got null", f.name, f.kind)
		}
	}
	for _, f := range b.noNullItems {
		v := present[f.name]
		if len(v) == 0 || v[0] != '[' {
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return memory.Errorf(memory.CodeInvalid, "argument %s must be an array", f.name)
		}
		for _, item := range items {
			if string(item) == "null" {
				return memory.Errorf(memory.CodeInvalid, "argument %s must be an array of %s, got a null item", f.name, plural(f.kind))
			}
		}
	}
	return nil
}

// rawArguments returns the call's arguments as JSON, however mcp-go holds them.
func rawArguments(req mcp.CallToolRequest) ([]byte, error) {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments, nil
	}
	if r, ok := req.Params.Arguments.(json.RawMessage); ok {
		return r, nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil, memory.Errorf(memory.CodeInvalid, "arguments must be a JSON object")
	}
	return b, nil
}

// argumentError turns a JSON decoding error into an invalid error naming the argument.
func argumentError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return memory.Errorf(memory.CodeInvalid, "arguments must be a JSON object, got %s", typeErr.Value)
		}
		return memory.Errorf(memory.CodeInvalid, "argument %s must be %s, got %s",
			typeErr.Field, jsonTypeName(typeErr.Type.Kind()), typeErr.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return memory.Errorf(memory.CodeInvalid, "unknown argument %s", name)
	}
	return memory.Errorf(memory.CodeInvalid, "arguments are not valid JSON: %v", err)
}

// jsonTypeName says a Go kind the way a JSON client thinks of it.
func jsonTypeName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return k.String()
}

// outputValidationPrefix starts the tool error mcp-go writes when a result
// does not match its output schema (Options.ValidateOutput).
const outputValidationPrefix = "output schema validation failed: "

// recodeValidationErrors rewrites the tool error that mcp-go's output schema
// validation produces after our handler ran, so typed cannot shape it, into
// Munin's "code: message" form: a result that does not match its schema is
// our bug and becomes internal.
func recodeValidationErrors(log *slog.Logger) func(context.Context, any, *mcp.CallToolRequest, any) {
	return func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || !res.IsError || len(res.Content) != 1 {
			return
		}
		text, ok := res.Content[0].(mcp.TextContent)
		if !ok || !strings.HasPrefix(text.Text, outputValidationPrefix) {
			return
		}
		log.Error("mcp result does not match its output schema", "tool", req.Params.Name, "err", text.Text)
		text.Text = "internal: " + text.Text
		res.Content[0] = text
	}
}
