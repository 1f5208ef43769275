package memory

import "time"

// ProjectRef names a project inside its workspace.
type ProjectRef struct {
	Workspace string
	Project   string
}

// String renders "workspace/project".
func (r ProjectRef) String() string { return r.Workspace + "/" + r.Project }

// Validate checks both names.
func (r ProjectRef) Validate() error {
	if err := ValidateName("workspace", r.Workspace); err != nil {
		return err
	}
	return ValidateName("project", r.Project)
}

// Version is one stored version of an entry. A tombstone (written by forget)
// has Deleted set and empty content.
type Version struct {
	Slug      string    `json:"slug"`
	Version   int       `json:"version"`
	Title     string    `json:"title"`
	Content   string    `json:"content"`
	Tags      []string  `json:"tags"`
	Agent     string    `json:"agent"`
	CreatedAt time.Time `json:"created_at"`
	Deleted   bool      `json:"deleted"`
	// ValidUntil is when the version stops holding (nil: never).
	ValidUntil *time.Time `json:"valid_until,omitempty"`
	// Supersedes are the slugs this version replaced.
	Supersedes []string `json:"supersedes,omitempty"`
	// SupersededBy is the slug whose later write superseded the entry (set
	// on a latest version read with its entry; "" when live).
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Stale reports whether v no longer holds at now: past its ValidUntil, or
// superseded by another entry.
func (v Version) Stale(now time.Time) bool {
	return v.SupersededBy != "" || v.Expired(now)
}

// Expired reports whether v's ValidUntil has passed at now.
func (v Version) Expired(now time.Time) bool {
	return v.ValidUntil != nil && !now.Before(*v.ValidUntil)
}

// VersionInfo is one line of an entry's history: a version without its content.
type VersionInfo struct {
	Version   int       `json:"version"`
	Title     string    `json:"title"`
	Agent     string    `json:"agent"`
	CreatedAt time.Time `json:"created_at"`
	Deleted   bool      `json:"deleted"`
	Size      int       `json:"size"`
}

// EntrySummary is one line of a listing: an entry's latest live version without content.
type EntrySummary struct {
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	Version   int       `json:"version"`
	Tags      []string  `json:"tags"`
	UpdatedAt time.Time `json:"updated_at"`
	// ValidUntil is the version's end (nil: none); SupersededBy names the
	// slug whose write superseded the entry ("" when live).
	ValidUntil   *time.Time `json:"valid_until,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	// Agent wrote the latest version (for a forgotten entry: who forgot it).
	Agent string `json:"agent,omitempty"`
}

// Write asks the store to append the next version of a slug.
type Write struct {
	Slug    string
	Title   string
	Content string
	Tags    []string
	Agent   string
	// Deleted makes this version a tombstone (forget).
	Deleted bool
	// ExpectedVersion, when set, must equal the slug's current latest version
	// (0: the slug must not exist yet), else the write fails with CodeConflict.
	ExpectedVersion *int
	// IdempotencyKey, when set, makes a retry with the same key and slug within
	// 24 h return the first result instead of writing again.
	IdempotencyKey string
	// ValidUntil, when set, is when the version stops holding.
	ValidUntil *time.Time
	// Supersedes names live slugs of the same project this write replaces.
	Supersedes []string
	// Review says whether the write becomes a proposal (see Review).
	Review Review
	// Similar are the duplicate hints found before the write, kept with a
	// proposal so that the review queue shows them.
	Similar []Similar
	// ApprovedBy, set when an approval applies proposal Proposal, is the
	// reviewer: the version records Agent (the proposer), the audit row
	// records the reviewer with the action approve.
	ApprovedBy string
	Proposal   int64
	// Client is the OAuth client of the caller whose audit row the write
	// makes (the writer's; for an approval the reviewer's), recorded beside
	// the agent; "" for keys and web sessions (memory.Caller.Client).
	Client string
}

// Review says whether a write becomes a version or a proposal. The store
// decides in the write's own transaction, by the project's review setting
// as the workspace's writer keeps it in memory (store/settings.go).
type Review int

const (
	// WriteDirect writes a version (admin keys, people in the web UI).
	WriteDirect Review = iota
	// ProposeIfReviewed proposes when the project reviews the writes of
	// agents (ReviewAgents), and writes a version otherwise (write keys).
	ProposeIfReviewed
	// ProposeAlways proposes (propose keys).
	ProposeAlways
)

// WriteResult is what a successful write returns.
type WriteResult struct {
	Slug      string    `json:"slug"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	// Replayed: an idempotent retry answered with the first write's result;
	// nothing was written. Not part of the answer to clients.
	Replayed bool `json:"-"`
	// Proposal is the id of the proposal the write became (0: a version was
	// written); BaseVersion is the version it was based on.
	Proposal    int64 `json:"proposal,omitempty"`
	BaseVersion int   `json:"base_version,omitempty"`
	// SimilarOff: the project's similar setting is off (SimilarOff), read
	// by the writer from its cache of the project's settings, so that the
	// service skips the duplicate hint without reading the setting again.
	// Not part of the answer to clients; its JSON name carries it from a
	// workspace's owner to the node that forwarded the write.
	SimilarOff bool `json:"similar_off,omitempty"`
}

// ListQuery pages through the live entries of a project, ordered by slug.
type ListQuery struct {
	Prefix string
	Tag    string
	Limit  int
	// Cursor is the opaque next_cursor of the previous page ("" for the first).
	Cursor string
}

// SearchQuery is a recall.
type SearchQuery struct {
	Text  string
	Limit int
	// Tags restricts hits to entries carrying all of these tags.
	Tags []string
	// IncludeStale also returns entries past their valid_until or
	// superseded, ranked below every live hit and marked by Hit.State.
	IncludeStale bool
	// At is the time whose staleness counts (zero: the time of the search):
	// the service's clock, so that tests can move it.
	At time.Time
}

// Hit is one recall result: bounded, a snippet instead of the whole content.
type Hit struct {
	// Project is where the hit was found (a recall may search several).
	Project   ProjectRef `json:"-"`
	Slug      string     `json:"slug"`
	Title     string     `json:"title"`
	Version   int        `json:"version"`
	Score     float64    `json:"score"`
	Snippet   string     `json:"snippet"`
	Tags      []string   `json:"tags"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Match says how the hit was found: MatchWords, MatchMeaning or MatchBoth.
	Match string `json:"match"`
	// Explanation says in a few words how the hit matched when it was not
	// by the query's words as written: "matched 'Datenbank' for
	// 'Datenbnak'", "parts of 'Fehlerbericht'", "by meaning". Empty for a
	// hit on the words as written.
	Explanation string `json:"explanation,omitempty"`
	// State is "" for a live entry, else StateExpired or StateSuperseded
	// (found with SearchQuery.IncludeStale).
	State string `json:"state,omitempty"`
}

// The states of an entry that no longer holds (Hit.State, list's state).
const (
	StateExpired    = "expired"
	StateSuperseded = "superseded"
)

// StaleState is v's state at now: "" when it holds, StateSuperseded when
// another entry replaced it, else StateExpired once its ValidUntil passed.
func (v Version) StaleState(now time.Time) string {
	switch {
	case v.SupersededBy != "":
		return StateSuperseded
	case v.Expired(now):
		return StateExpired
	}
	return ""
}

// How a recall hit was found: by its words (the keyword index), by its
// meaning (the embedding vectors, when switched on), or both ways.
const (
	MatchWords   = "words"
	MatchMeaning = "meaning"
	MatchBoth    = "both"
)

// SearchLogRow is one row of the search log: who searched what, and how it went.
type SearchLogRow struct {
	Project    ProjectRef
	Agent      string
	Query      string
	Hits       int
	DurationMS float64
	At         time.Time
}

// AuditRow is one row of the audit log: one per write.
type AuditRow struct {
	ID      int64     `json:"id"`
	Agent   string    `json:"agent"`
	Action  string    `json:"action"` // "remember" or "forget"
	Slug    string    `json:"slug"`
	Version int       `json:"version"`
	At      time.Time `json:"at"`
	// Client names the OAuth client the write was made through, beside
	// Agent (Caller.WithClient); empty for keys, web sessions and rows
	// written before it was recorded.
	Client string `json:"client,omitempty"`
}
