package memory

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckJSONText refuses JSON input that Go's decoder would silently alter or
// read differently from another reader:
//   - invalid UTF-8 and escaped halves of UTF-16 surrogate pairs both become
//     U+FFFD, so text the client never sent would be stored (JSON must be
//     UTF-8, RFC 8259);
//   - of two members with the same name (or names that differ only in case,
//     which Go's decoder matches to one field) the last wins, so a gateway
//     that reads the first would see another request than Munin runs.
//
// Every transport calls it on the whole message before decoding it: the HTTP
// body (/mcp and /api/v1), each stdio line, tool arguments, import lines.
// Malformed JSON passes: the decoder that reads the text reports that better.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return Errorf(CodeInvalid, "JSON text is not valid UTF-8")
	}
	if hasLoneSurrogate(b) {
		return Errorf(CodeInvalid, "JSON text escapes half of a UTF-16 surrogate pair (e.g. \\ud800 alone)")
	}
	return checkDuplicateNames(b)
}

// maxCheckDepth is where checkDuplicateNames stops: encoding/json refuses
// JSON nested deeper than 10,000 levels, so nothing deeper is ever read.
const maxCheckDepth = 10000

// jsonFrame is one open object or array while checkDuplicateNames walks.
type jsonFrame struct {
	object  bool
	wantKey bool              // object: the next string is a member name
	seen    map[string]string // object: folded name → name as sent
	key     string            // object: the member being read
	index   int               // array: the element being read
}

// checkDuplicateNames walks the JSON text with encoding/json's tokenizer,
// which unescapes names ("n\u0061me" is "name"), and refuses an object that
// has a member name twice, in any object at any depth, also inside arrays
// (JSON-RPC batches).
func checkDuplicateNames(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // a number out of float64's range must not end the walk early
	var stack []*jsonFrame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed JSON: the decoder reports that
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.wantKey {
			name, ok := tok.(string)
			if !ok { // '}' of an object
				stack = stack[:len(stack)-1]
				valueDone(stack)
				continue
			}
			folded := foldName(name)
			if first, dup := top.seen[folded]; dup {
				return duplicateError(stack, first, name)
			}
			if top.seen == nil {
				top.seen = make(map[string]string)
			}
			top.seen[folded] = name
			top.key, top.wantKey = name, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxCheckDepth {
				return nil // encoding/json refuses it anyway
			}
			stack = append(stack, &jsonFrame{object: tok == json.Delim('{'), wantKey: tok == json.Delim('{')})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone(stack)
		default:
			valueDone(stack)
		}
	}
}

// valueDone moves the innermost open container past the value just read.
func valueDone(stack []*jsonFrame) {
	if len(stack) == 0 {
		return
	}
	top := stack[len(stack)-1]
	if top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

// duplicateError names the member and where its object is (a JSON pointer).
func duplicateError(stack []*jsonFrame, first, again string) error {
	var where strings.Builder
	for _, f := range stack[:len(stack)-1] {
		where.WriteByte('/')
		if f.object {
			where.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key))
		} else {
			where.WriteString(strconv.Itoa(f.index))
		}
	}
	in := "the top-level object"
	if where.Len() > 0 {
		in = "the object at " + strconv.Quote(where.String())
	}
	if first != again {
		return Errorf(CodeInvalid, "duplicate key %q in %s: it is the same key as %q, names are matched ignoring case", again, in, first)
	}
	return Errorf(CodeInvalid, "duplicate key %q in %s", again, in)
}

// foldName folds a member name the way encoding/json matches names to
// fields (bytes.EqualFold): each rune becomes the smallest of its simple
// case-folding orbit, so "Name", "NAME" and "name" fold alike.
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				r = next
				break
			}
			r = next
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hasLoneSurrogate reports whether a JSON text escapes half of a UTF-16
// surrogate pair (e.g. "\ud800" alone). Backslashes only occur inside JSON
// strings, so a flat scan is exact.
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(b) || b[i] != 'u' {
			continue
		}
		r, ok := hex4(b, i+1)
		if !ok {
			continue // malformed escape: the JSON decoder reports it
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // low half without a high half
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 parses four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
