package memory

import (
	"strings"
	"testing"
)

func TestRedactKeys(t *testing.T) {
	key := KeyPrefix + "Ab3_-xYz0123456789abcdefghijklmnopqrstuvwxyz"
	for in, want := range map[string]string{
		"/w/acme/backend":                            "/w/acme/backend",
		"/w/" + key:                                  "/w/munin_[redacted]",
		"/w/acme/backend/entries/" + key + "/x":      "/w/acme/backend/entries/munin_[redacted]/x",
		"/api/v1/entries/" + key:                     "/api/v1/entries/munin_[redacted]",
		"/api/v1/entries/a" + key + "b/" + key + "/": "/api/v1/entries/amunin_[redacted]/munin_[redacted]/",
		"/x/MUNIN_" + key[6:]:                        "/x/munin_[redacted]",
		"/munin_":                                    "/munin_",
		"/w/munin%5F" + key[6:]:                      "/w/munin_[redacted]", // sent as munin%255F…
		"/w/Munin%255f" + key[6:] + "/x":             "/w/munin_[redacted]/x",
		"/w/munin-docs/munin%5":                      "/w/munin-docs/munin%5",
	} {
		got := RedactKeys(in)
		if got != want {
			t.Errorf("RedactKeys(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, key[6:]) {
			t.Errorf("RedactKeys(%q) keeps the secret part", in)
		}
	}
}
