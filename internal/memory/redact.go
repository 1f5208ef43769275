package memory

import (
	"regexp"
	"strings"
)

// keyLike matches what looks like a key: KeyPrefix, in any case, and the
// token characters after it (base64url). Names and slugs never contain "_",
// so nothing legitimate in a path matches. The "_" may also be
// percent-encoded, once or more ("munin%5F…", "munin%255F…"): a logged path
// is decoded once, so a key encoded twice would otherwise reach the log.
var keyLike = regexp.MustCompile(`(?i)munin(?:_|%(?:25)*5f)[A-Za-z0-9_-]+`)

// RedactKeys replaces anything in s that looks like a key with
// "munin_[redacted]". Every log line that prints a request path uses it: a
// key pasted into a URL (/w/…/munin_…) must not end up in the logs.
func RedactKeys(s string) string {
	if !strings.Contains(strings.ToLower(s), "munin") {
		return s
	}
	return keyLike.ReplaceAllString(s, KeyPrefix+"[redacted]")
}
