package memory

import "time"

// The types below serve people browsing a project (the web UI): sorted,
// offset-paged listings and filtered logs. Agents page with ListQuery's
// keyset cursor; people want "page 3 of 40, newest first".

// Entry orders for browsing.
const (
	OrderUpdated = "updated" // newest write first
	OrderSlug    = "slug"    // slug ascending
	OrderTitle   = "title"   // title ascending, case-insensitive
)

// EntryFilter asks for one page of a project's entries: the live ones, or
// with Forgotten the forgotten ones (whose latest version is a tombstone),
// newest forget first unless Order says otherwise.
type EntryFilter struct {
	Tag       string // only entries carrying this tag ("": all)
	Order     string // OrderUpdated (default), OrderSlug or OrderTitle
	Offset    int
	Limit     int
	Forgotten bool
}

// LogFilter narrows the audit log or the search log. Zero fields do not filter.
type LogFilter struct {
	Agent string
	// Slug matches the audit log's slug exactly, or as a prefix when it ends in "/".
	Slug string
	// Since and Until bound the time: Since <= at < Until.
	Since, Until time.Time
	// BeforeID pages backwards: only rows with an id below it.
	BeforeID int64
	// MissesOnly keeps only searches with no hits (search log only).
	MissesOnly bool
	// PrivateReview leaves out the audit rows of proposals (propose and
	// reject) except the propose rows of agent Viewer: what a key that does
	// not review sees (audit log only; the service sets it).
	PrivateReview bool
	Viewer        string
	Limit         int
}

// SearchRow is a search-log row with its id, for paging.
type SearchRow struct {
	ID int64
	SearchLogRow
}

// MissedQuery is a query that found nothing, with how often it was asked.
type MissedQuery struct {
	Query string
	Count int
	Last  time.Time
}
