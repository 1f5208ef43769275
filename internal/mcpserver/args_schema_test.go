package mcpserver

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// argValues are the JSON values each argument is tried with: every JSON
// type, null inside an array, integers written as decimals, and the review
// actions (the one enum).
var argValues = []string{`null`, `"x"`, `""`, `"list"`, `"approve"`, `0`, `1`, `-1`, `1.5`, `1.0`, `1e2`,
	`true`, `false`, `[]`, `["a"]`, `["a",null]`, `[null]`, `[1]`, `[[]]`, `{}`, `{"a":1}`}

// validRequired are values the schema takes for each tool's required
// arguments, so that a document tries one argument at a time.
var validRequired = map[string]string{"slug": `"a"`, "content": `"c"`, "query": `"q"`, "action": `"list"`}

// TestBinderRefusesWhatTheInputSchemaRefuses: each tool's arguments are
// checked by its binder alone (mcp-go's input schema validation is off, as
// it parsed every call's arguments once more), so the binder must refuse
// every document that the input schema tools/list sends refuses, compiled
// and run the way mcp-go's validator did. Each argument is tried with every
// kind of JSON value, alone beside the required ones, and the arguments as
// a whole with values that are no object.
func TestBinderRefusesWhatTheInputSchemaRefuses(t *testing.T) {
	impls := toolImpls(handlers{}, Options{})
	refused := 0
	for _, tool := range toolDefs() {
		raw := tool.RawInputSchema
		if len(raw) == 0 {
			var err error
			if raw, err = json.Marshal(tool.InputSchema); err != nil {
				t.Fatal(err)
			}
		}
		schema := compileSchema(tool.Name+"-input", raw)
		var shape struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(raw, &shape); err != nil || len(shape.Properties) == 0 {
			t.Fatalf("%s: input schema %s: %v", tool.Name, raw, err)
		}
		var docs []string
		for _, whole := range []string{`[]`, `"x"`, `1`, `true`, `[{}]`} {
			docs = append(docs, whole)
		}
		for _, name := range slices.Sorted(maps.Keys(shape.Properties)) {
			for _, v := range argValues {
				args := map[string]json.RawMessage{name: json.RawMessage(v)}
				for _, req := range shape.Required {
					if req != name {
						args[req] = json.RawMessage(validRequired[req])
					}
				}
				doc, err := json.Marshal(args)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(doc))
			}
		}
		for _, doc := range docs {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
			if err != nil {
				t.Fatal(err)
			}
			if schema.Validate(inst) == nil {
				continue
			}
			refused++
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = tool.Name, json.RawMessage(doc)
			if err := impls[tool.Name].check(req); err == nil {
				t.Errorf("%s %s: the input schema refuses it, the binder takes it", tool.Name, doc)
			}
		}
	}
	if refused < 100 {
		t.Fatalf("the schemas refused only %d documents: the test tries too little", refused)
	}
}
