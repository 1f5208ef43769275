package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// encodeTags stores tags as a JSON array; nil becomes [] so that readers
// always get a non-nil slice.
func encodeTags(tags []string) (string, error) {
	if tags == nil {
		tags = []string{}
	}
	b, err := json.Marshal(tags)
	if err != nil {
		return "", fmt.Errorf("encode tags: %w", err)
	}
	return string(b), nil
}

// decodeTags is the inverse of encodeTags and never returns nil. Every row
// read carries its tags, so the arrays encodeTags writes for ordinary tags
// (plain strings, no escapes, no spaces) are split directly; anything else
// goes to encoding/json, which cost about 1.3 µs a row.
func decodeTags(s string) ([]string, error) {
	if tags, ok := plainTags(s); ok {
		return tags, nil
	}
	tags := []string{}
	if s == "" {
		return tags, nil
	}
	if err := json.Unmarshal([]byte(s), &tags); err != nil {
		return nil, fmt.Errorf("decode tags: %w", err)
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, nil
}

// plainTags decodes s if it is a JSON array of strings as json.Marshal
// writes it for strings without escapes: `[]` or `["a","b"]`, no white
// space, each string valid UTF-8 without a quote, backslash or control
// character. ok is false for anything else, which encoding/json then
// decides; for what plainTags accepts, the result is what encoding/json
// returns (FuzzDecodeTags).
func plainTags(s string) (tags []string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if body == "" {
		return []string{}, true
	}
	if !utf8.ValidString(body) {
		return nil, false
	}
	tags = make([]string, 0, strings.Count(body, ",")+1)
	for more := true; more; {
		var item string
		item, body, more = strings.Cut(body, ",")
		if len(item) < 2 || item[0] != '"' || item[len(item)-1] != '"' {
			return nil, false
		}
		item = item[1 : len(item)-1]
		for i := 0; i < len(item); i++ {
			if c := item[i]; c < 0x20 || c == '"' || c == '\\' {
				return nil, false
			}
		}
		tags = append(tags, item)
	}
	return tags, true
}
