package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRecallLimitSettingsAreChecked: the recall and search-log limits come
// from flags or MUNIN_* variables; values that mean nothing are refused with
// an error naming the setting.
func TestRecallLimitSettingsAreChecked(t *testing.T) {
	serve := func(args ...string) error {
		return refused(t, append([]string{"serve", "--data", filepath.Join(t.TempDir(), "d"), "--addr", "127.0.0.1:0"}, args...)...)
	}
	for name, value := range map[string]string{
		"MUNIN_SEARCH_LOG_DAYS":    "30d",
		"MUNIN_SEARCH_LOG_ROWS":    "50k",
		"MUNIN_RECALL_RATE":        "ten",
		"MUNIN_RECALL_BURST":       "1.5",
		"MUNIN_RECALL_CONCURRENCY": "four",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			if err := serve(); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("serve with %s=%q: %v, want an error naming the variable", name, value, err)
			}
		})
	}
	for _, c := range []struct{ flag, value, want string }{
		{"--search-log-days", "-2", "search log days"},
		{"--search-log-rows", "-5", "search log rows"},
		{"--recall-rate", "-0.5", "recall rate"},
		{"--recall-rate", "NaN", "recall rate"},
		{"--recall-rate", "+Inf", "recall rate"},
		{"--recall-burst", "-1", "recall burst"},
		{"--recall-concurrency", "-2", "recall concurrency"},
	} {
		if err := serve(c.flag, c.value); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %s %s: %v, want an error naming the %s", c.flag, c.value, err, c.want)
		}
	}
	t.Setenv("MUNIN_RECALL_CONCURRENCY", "-7")
	if err := serve(); err == nil || !strings.Contains(err.Error(), "recall concurrency") {
		t.Errorf("MUNIN_RECALL_CONCURRENCY=-7: %v, want refused", err)
	}
}
