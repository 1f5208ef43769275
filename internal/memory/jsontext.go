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

// fewNames is how many member names an object keeps in a list, compared
// with bytes.EqualFold, before it folds them into a map.
const fewNames = 16

// jsonFrame is one open object or array while checkDuplicateNames walks.
type jsonFrame struct {
	object  bool
	wantKey bool              // object: the next string is a member name
	names   [][]byte          // object: the names so far, while fewNames or less
	seen    map[string][]byte // object with more: folded name → name as sent
	key     []byte            // object: the member being read
	index   int               // array: the element being read
}

// checkDuplicateNames walks the JSON text and refuses an object that has a
// member name twice, in any object at any depth, also inside arrays
// (JSON-RPC batches). Names are compared unescaped ("n\u0061me" is "name").
//
// It is a byte scan, not encoding/json's tokenizer: every transport runs it
// on up to a megabyte per request, and the tokenizer allocates for every
// scalar (1 MB of [0,0,…] cost 3 million allocations and 3× a full
// json.Unmarshal). On valid JSON the scan is exact: strings are the only
// place structural bytes can hide, and inside them a backslash escapes the
// next byte (\uXXXX's digits are neither a quote nor a backslash).
// Malformed JSON is left to the decoder, which refuses it as a whole.
func checkDuplicateNames(b []byte) error {
	var stack []jsonFrame
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxCheckDepth {
				return nil // encoding/json refuses it anyway
			}
			stack = pushFrame(stack, c == '{')
			i++
		case '}', ']':
			if len(stack) == 0 {
				return nil // malformed
			}
			stack = stack[:len(stack)-1]
			valueDone(stack)
			i++
		case '"':
			end, escaped := stringEnd(b, i)
			if end < 0 {
				return nil // unterminated: malformed
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				name := b[i+1 : end-1]
				if escaped {
					var s string
					if json.Unmarshal(b[i:end], &s) != nil {
						return nil // a malformed escape
					}
					name = []byte(s)
				}
				if err := addName(stack, name); err != nil {
					return err
				}
			} else {
				valueDone(stack)
			}
			i = end
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		default: // a number, true, false or null: up to the next delimiter
			for i++; i < len(b) && !isDelimiter(b[i]); i++ {
			}
			valueDone(stack)
		}
	}
	return nil
}

// pushFrame opens an object or array, reusing a frame's list of names.
func pushFrame(stack []jsonFrame, object bool) []jsonFrame {
	n := len(stack)
	if n < cap(stack) {
		stack = stack[:n+1]
	} else {
		stack = append(stack, jsonFrame{})
	}
	f := &stack[n]
	*f = jsonFrame{object: object, wantKey: object, names: f.names[:0]}
	return stack
}

// addName records the member name just read in the innermost object, or
// says it is the second of its kind there.
func addName(stack []jsonFrame, name []byte) error {
	top := &stack[len(stack)-1]
	if top.seen == nil {
		for _, first := range top.names {
			if bytes.EqualFold(first, name) {
				return duplicateError(stack, string(first), string(name))
			}
		}
		if len(top.names) < fewNames {
			top.names = append(top.names, name)
			top.key, top.wantKey = name, false
			return nil
		}
		top.seen = make(map[string][]byte, 2*fewNames)
		for _, n := range top.names {
			top.seen[foldName(n)] = n
		}
	}
	folded := foldName(name)
	if first, dup := top.seen[folded]; dup {
		return duplicateError(stack, string(first), string(name))
	}
	top.seen[folded] = name
	top.key, top.wantKey = name, false
	return nil
}

// stringEnd returns the index just past the string that starts at b[i]
// (a quote) and whether it holds an escape; -1 if it does not end.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			j++ // the escaped byte, which may be a quote
		}
	}
	return -1, escaped
}

// isDelimiter reports whether c ends a number or literal.
func isDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}

// valueDone moves the innermost open container past the value just read.
func valueDone(stack []jsonFrame) {
	if len(stack) == 0 {
		return
	}
	top := &stack[len(stack)-1]
	if top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

// duplicateError names the member and where its object is (a JSON pointer).
func duplicateError(stack []jsonFrame, first, again string) error {
	var where strings.Builder
	for _, f := range stack[:len(stack)-1] {
		where.WriteByte('/')
		if f.object {
			where.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(string(f.key)))
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
func foldName(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range string(s) {
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
