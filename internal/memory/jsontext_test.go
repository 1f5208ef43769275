package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHasLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		json string
		lone bool
	}{
		{`{"a":"plain"}`, false},
		{`{"a":"\ud83d\ude00"}`, false}, // a valid pair (😀)
		{`{"a":"\u00e4\n\"\\"}`, false},
		{`{"a":"\\ud800"}`, false}, // an escaped backslash, then text
		{`{"a":"\ud800"}`, true},
		{`{"a":"\udc00"}`, true},
		{`{"a":"\ud800\u0041"}`, true},
		{`{"a":"\ud800x"}`, true},
		{`{"a":"\uD83D\uDE00"}`, false},
		{`{"a":"\ud8`, false}, // truncated: the decoder's business
	} {
		if got := hasLoneSurrogate([]byte(tc.json)); got != tc.lone {
			t.Errorf("hasLoneSurrogate(%s) = %v, want %v", tc.json, got, tc.lone)
		}
	}
}

// TestCheckJSONTextDuplicates: a member name given twice — at any depth, in
// arrays and batches, escaped or differing only in case — is invalid and
// the message names it and its object.
func TestCheckJSONTextDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string // parts of the message; none: accepted
	}{
		{"distinct names", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":{"slug":"a"}}}`, nil},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`, nil},
		{"name equals a value", `{"name":"name","x":["name","name"]}`, nil},
		{"scalar and array tops", `[1,"a",null,true,{"a":1}]`, nil},
		{"huge number before a duplicate", `{"x":1e400,"a":1,"a":2}`, []string{`duplicate key "a"`, "top-level"}},
		{"envelope", `{"jsonrpc":"2.0","id":1,"method":"get","method":"tools/call"}`, []string{`duplicate key "method" in the top-level object`}},
		{"params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","name":"remember","arguments":{}}}`, []string{`duplicate key "name" in the object at "/params"`}},
		{"arguments", `{"params":{"name":"remember","arguments":{"slug":"a","content":"x","slug":"b"}}}`, []string{`duplicate key "slug"`, `"/params/arguments"`}},
		{"after a nested object", `{"a":{"b":{"c":1}},"d":[1,[2]],"a":3}`, []string{`duplicate key "a" in the top-level object`}},
		{"in a batch", `[{"id":1},{"id":2,"id":3}]`, []string{`duplicate key "id" in the object at "/1"`}},
		{"deep in arrays", `{"a":[[{"b":[{},{"k":1,"k":2}]}]]}`, []string{`"/a/0/0/b/1"`}},
		{"escaped name", `{"name":1,"n\u0061me":2}`, []string{`duplicate key "name"`}},
		{"case differs", `{"params":{"name":"get","Name":"remember"}}`, []string{`duplicate key "Name"`, `same key as "name"`, "ignoring case"}},
		{"unicode case folding", `{"ſ":1,"S":2}`, []string{`duplicate key "S"`}}, // U+017F folds to s, as in encoding/json
		{"pointer escapes", `{"a/b":{"~":{"x":1,"x":2}}}`, []string{`"/a~1b/~0"`}},
		{"malformed JSON is the decoder's business", `{"a":1,"b":[}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckJSONText([]byte(tc.json))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("got %v, want invalid", err)
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("%q lacks %q", err, part)
				}
			}
		})
	}
}

// TestCheckJSONTextDepth: JSON nested past what encoding/json reads is left
// to the decoder, without a walk that allocates per level without end.
func TestCheckJSONTextDepth(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000)
	if err := CheckJSONText([]byte(deep)); err != nil {
		t.Fatalf("deep JSON: %v", err)
	}
	var v any
	if json.Unmarshal([]byte(deep), &v) == nil {
		t.Fatal("encoding/json now reads JSON this deep; check duplicates in it too (maxCheckDepth)")
	}
}

// FuzzCheckJSONTextNames builds an object from fuzzed member names and
// compares the verdict with bytes.EqualFold, which encoding/json documents
// as its name matching: refused exactly when two names match.
func FuzzCheckJSONTextNames(f *testing.F) {
	for _, s := range []string{"a\x00b", "a\x00a", "name\x00Name", "ſ\x00S", "K\x00\u212a", "<\x00\\u003c", "x"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, joined string, depth uint8) {
		if !utf8.ValidString(joined) {
			return
		}
		names := strings.Split(joined, "\x00")
		var obj strings.Builder
		obj.WriteByte('{')
		for i, n := range names {
			b, _ := json.Marshal(n)
			if i > 0 {
				obj.WriteByte(',')
			}
			fmt.Fprintf(&obj, "%s:%d", b, i)
		}
		obj.WriteByte('}')
		text := obj.String()
		for range depth % 8 {
			text = `[0,{"k":` + text + `}]`
		}
		dup := false
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				dup = dup || bytes.EqualFold([]byte(names[i]), []byte(names[j]))
			}
		}
		err := CheckJSONText([]byte(text))
		if dup != (err != nil) {
			t.Fatalf("names %q: duplicate %v, CheckJSONText %v", names, dup, err)
		}
	})
}

// BenchmarkCheckJSONText: the cost of the check on a remember call with
// 1 MB of content, which every transport pays once per message.
func BenchmarkCheckJSONText(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","tags":["x","y"],"content":"` +
		strings.Repeat("lorem ipsum dolor \\n sit amet ", 1<<20/30) + `"}}}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := CheckJSONText(body); err != nil {
			b.Fatal(err)
		}
	}
}
