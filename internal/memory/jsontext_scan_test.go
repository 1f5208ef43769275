package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// tokenDuplicates is the reference checkDuplicateNames is held to: the same
// walk over encoding/json's tokenizer, which is exact but allocates per token.
func tokenDuplicates(b []byte) error {
	type frame struct {
		object, wantKey bool
		seen            map[string]string
		key             string
		index           int
	}
	done := func(stack []*frame) {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			top := stack[n-1]
			name, ok := tok.(string)
			if !ok {
				stack = stack[:n-1]
				done(stack)
				continue
			}
			folded := foldName([]byte(name))
			if first, dup := top.seen[folded]; dup {
				frames := make([]jsonFrame, len(stack))
				for i, f := range stack {
					frames[i] = jsonFrame{object: f.object, key: []byte(f.key), index: f.index}
				}
				return duplicateError(frames, first, name)
			}
			if top.seen == nil {
				top.seen = map[string]string{}
			}
			top.seen[folded] = name
			top.key, top.wantKey = name, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxCheckDepth {
				return nil
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), wantKey: tok == json.Delim('{')})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			done(stack)
		default:
			done(stack)
		}
	}
}

// FuzzCheckJSONTextScan: on valid JSON the byte scan refuses exactly what
// the tokenizer walk refuses, with the same message; on anything else it
// does not panic.
func FuzzCheckJSONTextScan(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"a":{"b":1},"c":[{"d":1,"D":2}]}`, `[{"x":"\"}","x":1}]`,
		`{"a\\":1,"a\\":2}`, `{"\u0061":1,"a":2}`, `{"k":[1,2,{"K":3,"\u212a":4}]}`,
		`{"a":-1.5e+3,"b":true,"c":null,"b":false}`, `{"a":1}{"a":2,"a":3}`,
		`{"a":"x\\\"y","a":"z"}`, `{"a" : 1 , "b":{ } ,"a":[ ]}`, `{"a":1,"b":[}`,
		`{"ſ":1,"S":2}`, `["a","a",{"a":[]},{"a":{}}]`, `{"a":"\ud83d\ude00","b":1}`,
		`{"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"K3":0}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		got := checkDuplicateNames(b) // any text: no panic
		if !json.Valid(b) || !utf8.Valid(b) || hasLoneSurrogate(b) {
			// Malformed: the decoder refuses it whatever the check says.
			// Invalid UTF-8 and lone surrogates: CheckJSONText refuses them
			// before the scan, and the tokenizer would turn them into
			// U+FFFD (the paths of the two messages differ).
			return
		}
		if want := tokenDuplicates(b); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: scan %v, tokenizer %v", s, got, want)
		}
	})
}

// TestCheckJSONTextScanRandom: random nested JSON, whose names are drawn
// from a few that match each other escaped or in another case, gets the
// tokenizer walk's verdict.
func TestCheckJSONTextScanRandom(t *testing.T) {
	names := []string{`"a"`, `"A"`, `"\u0061"`, `"b\"}"`, `"ſ"`, `"s"`, `"\\"`, `"K"`, `"\u212a"`, `"x y"`}
	scalars := []string{`0`, `-1.5e3`, `"v"`, `"{\"a\":1}"`, `true`, `null`, `"\\"`}
	rng := rand.New(rand.NewPCG(1, 2))
	var value func(sb *strings.Builder, depth int)
	value = func(sb *strings.Builder, depth int) {
		switch k := rng.IntN(4); {
		case depth > 4 || k == 0:
			sb.WriteString(scalars[rng.IntN(len(scalars))])
		case k == 1:
			sb.WriteString("[ ")
			for i := range rng.IntN(4) {
				if i > 0 {
					sb.WriteString(" ,")
				}
				value(sb, depth+1)
			}
			sb.WriteString("]")
		default:
			sb.WriteString("{")
			for i := range rng.IntN(4) {
				if i > 0 {
					sb.WriteString(",\n")
				}
				sb.WriteString(names[rng.IntN(len(names))] + " : ")
				value(sb, depth+1)
			}
			sb.WriteString("}")
		}
	}
	refused := 0
	for range 5000 {
		var sb strings.Builder
		value(&sb, 0)
		b := []byte(sb.String())
		if !json.Valid(b) {
			t.Fatalf("generated invalid JSON %s", b)
		}
		got, want := checkDuplicateNames(b), tokenDuplicates(b)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: scan %v, tokenizer %v", b, got, want)
		}
		if got != nil {
			refused++
		}
	}
	if refused < 500 || refused > 4500 {
		t.Fatalf("%d of 5000 refused: the generator does not test both verdicts", refused)
	}
}

// TestCheckJSONTextAllocations: the check of a 1 MB body allocates a
// bounded amount whatever the shape: the tokenizer walk allocated for every
// scalar and object (3 million times for [0,0,…]), which made the check
// cost three times a full json.Unmarshal of the same body.
func TestCheckJSONTextAllocations(t *testing.T) {
	const size = 1 << 20
	for name, body := range map[string]string{
		"numbers":        "[" + strings.Repeat("0,", size/2-1) + "0]",
		"small objects":  "[" + strings.Repeat(`{"a":0,"b":"x"},`, size/16-1) + `{"a":0}]`,
		"empty objects":  "[" + strings.Repeat("{},", size/3-1) + "{}]",
		"nested arrays":  strings.Repeat("[", 5000) + strings.Repeat("0,", size/4) + "0" + strings.Repeat("]", 5000),
		"remember call":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"` + strings.Repeat(`x\n`, size/3) + `"}}}`,
		"sibling tables": "[" + strings.Repeat(`{"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0},`, size/60) + "0]",
	} {
		b := []byte(body)
		if err := CheckJSONText(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The frames of the nesting and their lists of names, nothing per value.
		if n := testing.AllocsPerRun(3, func() { _ = CheckJSONText(b) }); n > 100 {
			t.Errorf("%s: %.0f allocations for %d bytes, want at most 100", name, n, len(b))
		}
	}
}
