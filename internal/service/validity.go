package service

import (
	"strings"
	"time"

	"munin/internal/memory"
)

// parseValidUntil reads remember's valid_until: RFC 3339, in the future
// (a fact already over when written is refused as a mistake, most often a
// wrong year, rather than stored expired), at most memory.MaxValidYears
// ahead. "" is no end.
func parseValidUntil(s string, now time.Time) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := parseTime("valid_until", s, "2027-01-31T00:00:00Z")
	if err != nil {
		return nil, err
	}
	t = t.UTC()
	if !t.After(now) {
		return nil, memory.Errorf(memory.CodeInvalid, "valid_until %s is not in the future", s)
	}
	if t.After(now.AddDate(memory.MaxValidYears, 0, 0)) {
		return nil, memory.Errorf(memory.CodeInvalid, "valid_until %s is more than %d years ahead", s, memory.MaxValidYears)
	}
	return &t, nil
}

// checkSupersedes checks remember's supersedes as far as the request
// tells: the slugs' form, their number, no slug twice, not the written slug
// itself. Whether they exist, are live and form no cycle is decided by the
// store in the write's transaction.
func checkSupersedes(slug string, supersedes []string) error {
	if len(supersedes) > memory.MaxSupersedes {
		return memory.Errorf(memory.CodeInvalid, "supersedes names %d slugs, at most %d", len(supersedes), memory.MaxSupersedes)
	}
	seen := make(map[string]bool, len(supersedes))
	for _, s := range supersedes {
		if err := memory.ValidateSlug(s); err != nil {
			return memory.Errorf(memory.CodeInvalid, "supersedes: %s", strings.TrimPrefix(err.Error(), "invalid: "))
		}
		if s == slug {
			return memory.Errorf(memory.CodeInvalid, "supersedes names %s itself", slug)
		}
		if seen[s] {
			return memory.Errorf(memory.CodeInvalid, "supersedes names %s twice", s)
		}
		seen[s] = true
	}
	return nil
}

// parseAsOf reads the as_of of get, list and history: RFC 3339, not in the
// future. "" is now (zero time).
func parseAsOf(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := parseTime("as_of", s, "2026-12-01T09:30:00Z")
	if err != nil {
		return time.Time{}, err
	}
	if t.After(now) {
		return time.Time{}, memory.Errorf(memory.CodeInvalid, "as_of %s is in the future", s)
	}
	return t.UTC(), nil
}

// utcOrNil is t in UTC, nil for nil: answers show times in UTC.
func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// maxTimeText bounds the text of a time the error message repeats: an RFC
// 3339 time with nanoseconds and an offset has 35 characters.
const maxTimeText = 64

// parseTime reads field's RFC 3339 time s; example shows the form in the
// error.
func parseTime(field, s, example string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err == nil {
		return t, nil
	}
	if len(s) > maxTimeText {
		return time.Time{}, memory.Errorf(memory.CodeInvalid, "%s is not an RFC 3339 time such as %s (%d characters)", field, example, len(s))
	}
	return time.Time{}, memory.Errorf(memory.CodeInvalid, "%s %q is not an RFC 3339 time such as %s", field, s, example)
}
