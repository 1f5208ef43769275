package replica

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// metaDirSuffix is Litestream's name for the directory beside a database
// that holds its local state (litestream.MetaDirSuffix): .<file>-litestream.
const metaDirSuffix = "-litestream"

// MetaDir returns the directory where Litestream keeps its local state of
// dbPath (LTX files, position). Anything that lists the data directory must
// ignore it; it is not part of a backup.
func MetaDir(dbPath string) string {
	dir, file := filepath.Split(dbPath)
	return filepath.Join(dir, "."+file+metaDirSuffix)
}

// StartEpoch starts replicating dbPath into a new, empty location
// (EpochURL of the epoch just won). It unregisters the file if it is
// registered, discards Litestream's local state and registers it again, so
// the first upload is a full snapshot at TXID 1.
//
// Why discard: Litestream uploads a fresh location's history from its local
// L0 files, starting at TXID 1, and deletes those files five minutes after
// they were compacted; a file registered at a new location with older local
// state then fails every sync ("open ltx file …0001.ltx: no such file").
// A restored file may also find a stale state directory from an earlier
// ownership. Use Register, not StartEpoch, to resume at the same location
// (after the sidecar restarted).
func (c *Client) StartEpoch(ctx context.Context, dbPath, replicaURL string) error {
	p, err := abs(dbPath)
	if err != nil {
		return err
	}
	if _, err := c.Unregister(ctx, p); err != nil {
		return err
	}
	if err := os.RemoveAll(MetaDir(p)); err != nil {
		return c.wrap("start epoch", p, fmt.Errorf("remove local litestream state: %w", err))
	}
	return c.Register(ctx, p, replicaURL)
}

// EpochURL is where a workspace's file is replicated during one epoch:
// <base>/<workspace>/<epoch as 16 hex digits>, with base's query (an S3
// endpoint or region, e.g. s3://bucket/munin?endpoint=http://127.0.0.1:9000)
// kept at the end. A new owner restores the previous epoch's location once
// and replicates into its own, so a stale owner's sidecar can only ever
// append to a location nobody reads again. Check base with CheckBaseURL.
func EpochURL(base, workspace string, epoch int64) string {
	seg := url.PathEscape(workspace) + "/" + fmt.Sprintf("%016x", uint64(epoch))
	head, query, hasQuery := strings.Cut(base, "?")
	u := strings.TrimRight(head, "/") + "/" + seg
	if hasQuery {
		u += "?" + query
	}
	return u
}

// CheckBaseURL validates a replica base location: file:///absolute/dir or
// s3://bucket[/prefix][?endpoint=…&region=…] (credentials come from the
// environment, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never the URL).
func CheckBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("replica location %q: %w", base, err)
	}
	if u.Fragment != "" || u.User != nil {
		return fmt.Errorf("replica location %q: no fragment or credentials in the URL", base)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || !filepath.IsAbs(u.Path) || u.RawQuery != "" {
			return fmt.Errorf("replica location %q: want file:///absolute/dir", base)
		}
	case "s3":
		if u.Host == "" {
			return fmt.Errorf("replica location %q: want s3://bucket/prefix", base)
		}
	default:
		return fmt.Errorf("replica location %q: scheme %q not supported (file:///dir or s3://bucket/prefix)", base, u.Scheme)
	}
	return nil
}
