package memory

import "time"

// The change feed (docs/changes.md) reads a workspace's audit log after a
// position. These are the types its read passes between the service, the
// store and a cluster's owner of the workspace.

// DefaultChangesLimit and MaxChangesLimit bound one page of the change feed
// (across all projects of the caller together).
const (
	DefaultChangesLimit = 100
	MaxChangesLimit     = 1000
)

// FeedProject is one project of a feed read and who reads it: the agent of
// the caller's key there, and whether the caller reviews there.
type FeedProject struct {
	Project string
	Viewer  string
	// Private leaves out the proposal rows (propose, reject, an imported
	// proposal or decision) of proposals by agents other than Viewer: what a
	// key that does not review may see.
	Private bool
}

// FeedQuery asks one workspace for its audit rows after a position.
type FeedQuery struct {
	Projects []FeedProject
	// Identity is the workspace identity the position was read from; the
	// read is refused (invalid, "expired") when the file has another one
	// now. Empty: none known yet (the workspace is new to the cursor).
	Identity string
	// After is the last audit id already seen (0: none); Stamp is the time
	// of that row in unix nanoseconds, checked so that a file restored from
	// an older copy, whose ids were given out again, is noticed.
	After, Stamp int64
	// Floor, with After 0, leaves out rows written before it: a workspace
	// new to a cursor starts at the cursor's time, not at its history.
	Floor time.Time
	// Limit bounds the rows (at most MaxChangesLimit).
	Limit int
	// EndOnly reads the identity and the end, no rows (since=now).
	EndOnly bool
}

// FeedRow is one audit row of a feed read.
type FeedRow struct {
	ID       int64
	Project  string
	Agent    string
	Action   string
	Slug     string
	Version  int
	At       time.Time
	Proposal int64 // the proposal's row id, 0 if none
	// Client is the OAuth client the row's write was made through ("" for
	// none): see AuditRow.Client.
	Client string
}

// FeedPage is what a feed read of one workspace found, all in one read
// snapshot.
type FeedPage struct {
	Identity string
	Rows     []FeedRow
	// EndID and EndStamp are the workspace's last acknowledged audit row in
	// the snapshot (0, 0 for an empty log); rows after it wait for their
	// batch's acknowledgement.
	EndID, EndStamp int64
	// Complete: Rows holds every row the query asked for up to EndID, so a
	// reader that took all of them may move its position to the end.
	Complete bool
}
