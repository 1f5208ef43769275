//go:build cluster

// Reading back: entries over the REST API of the nodes, and workspace files
// — a replica's latest epoch restored with `litestream restore` — with
// SQLite directly.

package clustertest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// restReader reads over GET /api/v1/entries/{slug} and /api/v1/history/{slug}
// with one key per project, spreading the entries over the nodes in bases
// (any node answers any request). An unavailable answer or a broken
// connection is retried on the next node, as a client of a cluster would,
// at most retries times.
type restReader struct {
	bases   []string          // http://127.0.0.1:port
	tokens  map[string]string // project → key
	hc      *http.Client
	retries int
}

func newRESTReader(bases []string, tokens map[string]string) *restReader {
	return &restReader{bases: bases, tokens: tokens, retries: 50,
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// errNotFound marks a 404 with the code not_found.
var errNotFound = errors.New("not_found")

// do sends GET path?query to a node chosen by key and decodes a 200 into out.
func (r *restReader) do(ctx context.Context, key, path string, q url.Values, out any) error {
	first := int(fnv(key) % uint32(len(r.bases)))
	var last error
	for try := 0; try <= r.retries; try++ {
		base := r.bases[(first+try)%len(r.bases)]
		if try >= len(r.bases) {
			sleep(ctx, 100*time.Millisecond) // every node tried: give the cluster time
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+r.tokens[q.Get("project")])
		resp, err := r.hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		var body struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			err = json.NewDecoder(resp.Body).Decode(out)
			resp.Body.Close()
			return err
		case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway:
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			last = fmt.Errorf("%s %s: %d %s", base, path, resp.StatusCode, body.Error.Message)
			continue
		default:
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound && body.Error.Code == "not_found" {
				return errNotFound
			}
			return fmt.Errorf("%s %s: %d %s: %s", base, path, resp.StatusCode, body.Error.Code, body.Error.Message)
		}
	}
	return last
}

func (r *restReader) get(ctx context.Context, project, slug string, version int) (string, int, int, bool, error) {
	q := url.Values{"project": {project}}
	if version > 0 {
		q.Set("version", strconv.Itoa(version))
	}
	var e struct {
		Content       string `json:"content"`
		Version       int    `json:"version"`
		LatestVersion int    `json:"latest_version"`
	}
	err := r.do(ctx, project+slug, "/api/v1/entries/"+escapeSlug(slug), q, &e)
	if errors.Is(err, errNotFound) {
		return "", 0, 0, false, nil
	}
	return e.Content, e.Version, e.LatestVersion, err == nil, err
}

func (r *restReader) history(ctx context.Context, project, slug string) ([]int, error) {
	q := url.Values{"project": {project}, "limit": {strconv.Itoa(historyPage)}}
	var h struct {
		Versions []struct {
			Version int `json:"version"`
		} `json:"versions"`
	}
	if err := r.do(ctx, project+slug, "/api/v1/history/"+escapeSlug(slug), q, &h); err != nil {
		return nil, err
	}
	out := make([]int, len(h.Versions))
	for i, v := range h.Versions {
		out[i] = v.Version
	}
	return out, nil
}

// escapeSlug escapes each path segment of a slug, keeping its slashes.
func escapeSlug(slug string) string { return (&url.URL{Path: slug}).EscapedPath() }

// fnv is FNV-1a of s: a stable spread of entries over nodes.
func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// readStored reads every version of a workspace file and its PRAGMA
// integrity_check answer. Entries are named workspace/project.
func readStored(path, workspace string) (stored, string, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	var integrity string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil {
		return nil, "", fmt.Errorf("integrity_check %s: %w", path, err)
	}
	rows, err := db.Query("SELECT project, slug, version, content FROM versions")
	if err != nil {
		return nil, integrity, fmt.Errorf("read %s: %w", path, err)
	}
	defer rows.Close()
	s := stored{}
	for rows.Next() {
		var project, slug, content string
		var v int
		if err := rows.Scan(&project, &slug, &v, &content); err != nil {
			return nil, integrity, err
		}
		ref := slugRef{workspace + "/" + project, slug}
		if s[ref] == nil {
			s[ref] = map[int]string{}
		}
		s[ref][v] = content
	}
	return s, integrity, rows.Err()
}

// epochDir is where a workspace's replica of one epoch lies under a file
// replica base: <base>/<workspace>/<epoch as 16 hex digits>, as the nodes
// write it (replica.EpochURL).
func epochDir(base, workspace string, epoch int64) string {
	return filepath.Join(base, url.PathEscape(workspace), fmt.Sprintf("%016x", uint64(epoch)))
}

// latestEpoch returns the highest epoch directory of a workspace's replica.
func latestEpoch(base, workspace string) (int64, error) {
	entries, err := os.ReadDir(filepath.Join(base, url.PathEscape(workspace)))
	if err != nil {
		return 0, err
	}
	var best int64
	for _, e := range entries {
		if n, err := strconv.ParseUint(e.Name(), 16, 64); err == nil && e.IsDir() && len(e.Name()) == 16 {
			best = max(best, int64(n))
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no epoch directory under %s", filepath.Join(base, workspace))
	}
	return best, nil
}

// restore runs `litestream restore -integrity-check full` of a replica
// directory into out (at most two minutes).
func restore(ctx context.Context, litestream, dir, out string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, litestream, "restore", "-integrity-check", "full", "-o", out, "file://"+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("litestream restore %s: %v: %s", dir, err, strings.TrimSpace(string(b)))
	}
	return nil
}
