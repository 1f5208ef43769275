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
// argument. mcp-go's input schema validation rejects the same calls first,
// but its texts are the validator's ("&{Missing:[slug]}"); the binder is
// what explains them (see recodeValidationErrors).
type binder[A any] struct {
	required []string        // JSON names of the fields without omitempty
	known    map[string]bool // every JSON name, spelled exactly
}

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
	}
	return b
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
	return args, nil
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

// Prefixes of the errors mcp-go itself writes into tool results.
const (
	inputValidationPrefix  = "input schema validation failed: "
	outputValidationPrefix = "output schema validation failed: "
)

// recodeValidationErrors rewrites the tool errors that mcp-go's schema
// validation produces — before or after our handler runs, so typed cannot
// shape them — into Munin's "code: message" form. An input failure is
// explained by the tool's own binder ("invalid: argument limit must be an
// integer, got string"); an output failure is our bug and becomes internal.
func recodeValidationErrors(log *slog.Logger, checks map[string]func(mcp.CallToolRequest) error) func(context.Context, any, *mcp.CallToolRequest, any) {
	return func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || !res.IsError || len(res.Content) != 1 {
			return
		}
		text, ok := res.Content[0].(mcp.TextContent)
		if !ok {
			return
		}
		switch {
		case strings.HasPrefix(text.Text, inputValidationPrefix):
			text.Text = "invalid: arguments do not match the tool's input schema: " + strings.TrimPrefix(text.Text, inputValidationPrefix)
			if check := checks[req.Params.Name]; check != nil {
				if err := check(*req); err != nil {
					text.Text = memory.PublicMessage(err)
				}
			}
		case strings.HasPrefix(text.Text, outputValidationPrefix):
			log.Error("mcp result does not match its output schema", "tool", req.Params.Name, "err", text.Text)
			text.Text = "internal: " + text.Text
		default:
			return
		}
		res.Content[0] = text
	}
}
