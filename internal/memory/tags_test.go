package memory_test

import (
	"testing"

	"munin/internal/memory"
)

// TestHasTags: every wanted tag must be held, exactly (no case folding, no
// prefix); no wanted tags keep everything.
func TestHasTags(t *testing.T) {
	for _, c := range []struct {
		name       string
		tags, want []string
		ok         bool
	}{
		{"none wanted", []string{"a"}, nil, true},
		{"none wanted, none held", nil, nil, true},
		{"all held", []string{"db", "ops", "x"}, []string{"ops", "db"}, true},
		{"one missing", []string{"db"}, []string{"db", "ops"}, false},
		{"none held", nil, []string{"db"}, false},
		{"case differs", []string{"DB"}, []string{"db"}, false},
		{"prefix only", []string{"dbs"}, []string{"db"}, false},
	} {
		if got := memory.HasTags(c.tags, c.want); got != c.ok {
			t.Errorf("%s: HasTags(%q, %q) = %v, want %v", c.name, c.tags, c.want, got, c.ok)
		}
	}
}
