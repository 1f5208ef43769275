package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaSets compiles, once per test binary, each tool's output schema as
// tools/list sends it (lean) and as mcp-go generates it from the Go type
// (strict: additionalProperties false, required fields, nested items).
var schemaSets = sync.OnceValues(func() (lean, strict map[string]*jsonschema.Schema) {
	lean, strict = map[string]*jsonschema.Schema{}, map[string]*jsonschema.Schema{}
	for _, tool := range toolDefs() {
		lean[tool.Name] = compileSchema(tool.Name+"-lean", tool.RawOutputSchema)
	}
	for _, tool := range generatedTools() {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			panic(err)
		}
		strict[tool.Name] = compileSchema(tool.Name+"-strict", raw)
	}
	return lean, strict
})

func compileSchema(name string, raw []byte) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	return s
}

// validateResult checks a tool's structured content, as the client received
// it, the way a validating client does against the schema tools/list sent,
// and against the strict schema generated from the Go type: the lean
// schema is what clients check, the strict one the contract the results
// keep (schemas.go).
func validateResult(t testing.TB, tool string, content any) {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatalf("%s: marshal structured content: %v", tool, err)
	}
	lean, strict := schemaSets()
	for kind, set := range map[string]map[string]*jsonschema.Schema{"listed": lean, "generated": strict} {
		s, ok := set[tool]
		if !ok {
			t.Fatalf("%s: no %s output schema", tool, kind)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := s.Validate(doc); err != nil {
			t.Fatalf("%s result %s does not match the %s output schema: %v", tool, raw, kind, err)
		}
	}
}

// TestLeanSchemasKeepEveryField: the lean schemas name every argument and
// every result field the generated ones name, with the same types (less
// the null of output types), and the same required arguments; they drop
// only what schemas.go says.
func TestLeanSchemasKeepEveryField(t *testing.T) {
	gen := map[string]mcp.Tool{}
	for _, tool := range generatedTools() {
		gen[tool.Name] = tool
	}
	for _, tool := range toolDefs() {
		g := gen[tool.Name]
		var gin map[string]any
		if err := json.Unmarshal(g.RawInputSchema, &gin); err != nil {
			t.Fatal(err)
		}
		// The lean schema is encoded once, into RawInputSchema (schemas.go):
		// mcp-go would encode a structured one on every tools/call.
		var in map[string]any
		if err := json.Unmarshal(tool.RawInputSchema, &in); err != nil {
			t.Fatalf("%s: RawInputSchema: %v", tool.Name, err)
		}
		if in["additionalProperties"] != nil {
			t.Errorf("%s: input schema still says additionalProperties", tool.Name)
		}
		if !slices.Equal(stringList(in["required"]), stringList(gin["required"])) {
			t.Errorf("%s: required %v, generated %v", tool.Name, in["required"], gin["required"])
		}
		gp, lp := gin["properties"].(map[string]any), in["properties"].(map[string]any)
		if !slices.Equal(slices.Sorted(maps.Keys(lp)), slices.Sorted(maps.Keys(gp))) {
			t.Errorf("%s: arguments %v, generated %v", tool.Name, slices.Sorted(maps.Keys(lp)), slices.Sorted(maps.Keys(gp)))
		}
		for name, p := range gp {
			want := maps.Clone(p.(map[string]any))
			// Said once in the instructions, or (get's version) by the
			// tool's description: TestInstructionsSayWhatSchemasLeaveOut.
			undescribed := slices.Contains([]string{"project", "as_of", "cursor", "limit"}, name) || (tool.Name == "get" && name == "version")
			if undescribed {
				delete(want, "description")
			}
			if !equalJSON(lp[name], want) {
				t.Errorf("%s: argument %s is %v, generated %v", tool.Name, name, lp[name], p)
			}
			if undescribed && lp[name].(map[string]any)["description"] != nil {
				t.Errorf("%s: %s still described", tool.Name, name)
			}
		}

		out := map[string]any{}
		if err := json.Unmarshal(tool.RawOutputSchema, &out); err != nil {
			t.Fatal(err)
		}
		gout := asMap(t, g.OutputSchema)
		if out["type"] != "object" || out["required"] != nil || out["additionalProperties"] != nil {
			t.Errorf("%s: output schema %s", tool.Name, tool.RawOutputSchema)
		}
		op, gop := out["properties"].(map[string]any), gout["properties"].(map[string]any)
		wantNames := slices.Sorted(maps.Keys(gop))
		if dropped := map[string]string{"forget": "similar", "changes": "unavailable"}[tool.Name]; dropped != "" {
			wantNames = slices.DeleteFunc(wantNames, func(n string) bool { return n == dropped })
		}
		if got := slices.Sorted(maps.Keys(op)); !slices.Equal(got, wantNames) {
			t.Errorf("%s: result fields %v, generated %v", tool.Name, got, wantNames)
		}
		for name, p := range op {
			if got, want := typeOf(p), typeOf(gop[name]); got != want {
				t.Errorf("%s: result field %s has type %s, generated %s", tool.Name, name, got, want)
			}
		}
	}
}

// typeOf is a schema node's type, "null or" left out, with an array's item
// type: "array of string".
func typeOf(v any) string {
	n, _ := v.(map[string]any)
	typ := fmt.Sprint(n["type"])
	if ts, ok := n["type"].([]any); ok && len(ts) == 2 && ts[0] == "null" {
		typ = fmt.Sprint(ts[1])
	}
	if typ == "array" {
		return "array of " + typeOf(n["items"])
	}
	return typ
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stringList reads a JSON array of strings (nil for none).
func stringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

// TestSchemaSetsDiffer: what the lean schema lets through and the generated
// one does not — so validateResult's second check can fail where a
// client's cannot — what both refuse, and the null only the lean one
// refuses.
func TestSchemaSetsDiffer(t *testing.T) {
	lean, strict := schemaSets()
	check := func(s *jsonschema.Schema, doc string) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
		if err != nil {
			t.Fatal(err)
		}
		return s.Validate(v)
	}
	for _, doc := range []string{
		`{"hits":[{"slug":"a"}]}`, // a hit without its other fields
		`{"hits":[],"extra":1}`,   // a field the Go type lacks
		`{}`,                      // hits missing
	} {
		if err := check(lean["recall"], doc); err != nil {
			t.Errorf("lean schema refuses %s: %v", doc, err)
		}
		if err := check(strict["recall"], doc); err == nil {
			t.Errorf("generated schema accepts %s", doc)
		}
	}
	for _, doc := range []string{`{"hits":[1]}`, `{"hits":"x"}`} {
		if check(lean["recall"], doc) == nil || check(strict["recall"], doc) == nil {
			t.Errorf("a schema accepts %s", doc)
		}
	}
	// The one place the lean schema is the stricter: results are never null.
	if check(lean["recall"], `{"hits":null}`) == nil {
		t.Error("lean schema accepts hits: null")
	}
}
