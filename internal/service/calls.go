package service

import (
	"time"

	"munin/internal/memory"
)

// The requests and answers of the memory calls, shared by MCP (tool
// arguments and results, whose JSON schemas clients see in tools/list) and
// REST (bodies and answers): one set of names for both. Descriptions are
// short on purpose: the whole tools/list answer lands in every agent's
// context window (budget: under 6,000 bytes).

// RememberRequest stores the next version of a slug.
type RememberRequest struct {
	Project         string   `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	Slug            string   `json:"slug" jsonschema:"lowercase path, e.g. decisions/db-choice"`
	Content         string   `json:"content" jsonschema:"the text (markdown), at most 64 KiB"`
	Title           string   `json:"title,omitempty" jsonschema:"default: first line of content"`
	Tags            []string `json:"tags,omitempty"`
	ExpectedVersion *int     `json:"expected_version,omitempty" jsonschema:"fail unless the latest version is this; 0: slug must be new"`
	IdempotencyKey  string   `json:"idempotency_key,omitempty" jsonschema:"retries with it return the first result"`
	ValidUntil      string   `json:"valid_until,omitempty" jsonschema:"RFC 3339; after it recall skips the entry"`
	Supersedes      []string `json:"supersedes,omitempty" jsonschema:"slugs this replaces"`
}

// ForgetRequest writes a tombstone version of a slug.
type ForgetRequest struct {
	Project         string `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	Slug            string `json:"slug"`
	ExpectedVersion *int   `json:"expected_version,omitempty" jsonschema:"fail unless the latest version is this"`
}

// WriteResult answers remember and forget: the version written, or, for a
// write that waits for review, state "pending", the proposal's id and the
// version it is based on. Similar names existing entries a new slug's text
// closely matches (a hint to update one of them instead).
type WriteResult struct {
	Project     string           `json:"project"`
	Slug        string           `json:"slug"`
	Version     int              `json:"version,omitempty"`
	State       string           `json:"state,omitempty"`
	Proposal    string           `json:"proposal,omitempty"`
	BaseVersion *int             `json:"base_version,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	Similar     []memory.Similar `json:"similar,omitempty"`
	// similarOff: the project's setting switched the hint off
	// (memory.WriteResult.SimilarOff); not part of the answer.
	similarOff bool
}

// RecallRequest searches the live entries of one project, or of every
// project the caller holds a key for.
type RecallRequest struct {
	Project string   `json:"project,omitempty" jsonschema:"workspace/project; default: all of yours"`
	Query   string   `json:"query" jsonschema:"at most 1 KB, 32 distinct words (function words not counted)"`
	Limit   int      `json:"limit,omitempty" jsonschema:"1-50, default 10"`
	Tags    []string `json:"tags,omitempty" jsonschema:"only entries with all these tags"`
	// IncludeStale also finds expired and superseded entries, below live ones.
	IncludeStale bool `json:"include_stale,omitempty"`
}

// Hit is one recall hit.
type Hit struct {
	Project   string    `json:"project"`
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	Version   int       `json:"version"`
	Score     float64   `json:"score"`
	Snippet   string    `json:"snippet"`
	Tags      []string  `json:"tags"`
	UpdatedAt time.Time `json:"updated_at"`
	Match     string    `json:"match" jsonschema:"words, meaning or both"`
	// Explanation says how the hit matched when not by the query's words
	// as written (memory.Hit's Explanation).
	Explanation string `json:"explanation,omitempty" jsonschema:"how it matched if not by the words as written"`
	// State marks a hit that is not a live entry: "pending" (the caller's
	// own proposal), "expired" or "superseded" (with include_stale).
	State string `json:"state,omitempty"`
}

// RecallResult answers recall: the hits, best first.
type RecallResult struct {
	Hits []Hit `json:"hits"`
}

// GetRequest reads a version of a slug (0: the latest).
type GetRequest struct {
	Project string `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	Slug    string `json:"slug"`
	Version int    `json:"version,omitempty" jsonschema:"default: latest"`
	AsOf    string `json:"as_of,omitempty" jsonschema:"RFC 3339: as it was then"`
}

// Entry answers get: one version and the slug's latest version number.
type Entry struct {
	Project       string     `json:"project"`
	Slug          string     `json:"slug"`
	Version       int        `json:"version"`
	Title         string     `json:"title"`
	Content       string     `json:"content"`
	Tags          []string   `json:"tags"`
	Agent         string     `json:"agent"`
	CreatedAt     time.Time  `json:"created_at"`
	LatestVersion int        `json:"latest_version"`
	ValidUntil    *time.Time `json:"valid_until,omitempty"`
	Supersedes    []string   `json:"supersedes,omitempty"`
	// Expired: past valid_until; SupersededBy: the slug that replaced it.
	Expired      bool   `json:"expired,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
}

// ListRequest pages through live entries by slug.
type ListRequest struct {
	Project string `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	Prefix  string `json:"prefix,omitempty" jsonschema:"only slugs starting with this"`
	Tag     string `json:"tag,omitempty"`
	Limit   int    `json:"limit,omitempty" jsonschema:"1-200, default 50"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	AsOf    string `json:"as_of,omitempty" jsonschema:"RFC 3339: as it was then"`
}

// ListEntry is one entry of a list page.
type ListEntry struct {
	Project   string    `json:"project"`
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	Version   int       `json:"version"`
	Tags      []string  `json:"tags"`
	UpdatedAt time.Time `json:"updated_at"`
	// State marks an entry that no longer holds: "expired" or "superseded".
	State string `json:"state,omitempty"`
}

// ListResult answers list: a page and the cursor of the next ("" at the end).
type ListResult struct {
	Entries    []ListEntry `json:"entries"`
	NextCursor string      `json:"next_cursor"`
}

// HistoryRequest lists a slug's versions, newest first.
type HistoryRequest struct {
	Project string `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	Slug    string `json:"slug"`
	Limit   int    `json:"limit,omitempty" jsonschema:"1-200, default 50"`
	AsOf    string `json:"as_of,omitempty" jsonschema:"RFC 3339: as it was then"`
}

// HistoryResult answers history.
type HistoryResult struct {
	Project  string               `json:"project"`
	Slug     string               `json:"slug"`
	Versions []memory.VersionInfo `json:"versions"`
}

// ProjectAccess is one project a caller reaches, and how.
type ProjectAccess struct {
	Project string      `json:"project"`
	Role    memory.Role `json:"role"`
	Agent   string      `json:"agent"`
}

// Me answers "whom am I": the projects the caller's keys reach, the first
// one first (where calls without a project act).
type Me struct {
	Projects []ProjectAccess `json:"projects"`
	// ServerAdmin is set for a server-admin key, which reaches no project's memory.
	ServerAdmin bool `json:"server_admin,omitempty"`
}

// nonNil makes an absent list encode as [] rather than null: clients index
// into arrays without a nil check, and the output schemas say array.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
