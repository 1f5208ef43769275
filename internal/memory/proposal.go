package memory

import "time"

// A project's review setting: whether the writes of its write keys become
// proposals. Keys with the role propose always propose; admin keys and
// people in the web UI always write directly.
const (
	ReviewOff    = "off"
	ReviewAgents = "agents"
)

// ParseReview checks a review setting.
func ParseReview(s string) (string, error) {
	switch s {
	case ReviewOff, ReviewAgents:
		return s, nil
	}
	return "", Errorf(CodeInvalid, "review %q must be off or agents", s)
}

// The states of a proposal.
const (
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
)

// Proposal is a write waiting for review, or the record of one decided.
type Proposal struct {
	ID          int64      `json:"id"`
	Project     ProjectRef `json:"-"`
	Slug        string     `json:"slug"`
	Agent       string     `json:"agent"`
	BaseVersion int        `json:"base_version"`
	Title       string     `json:"title"`
	Content     string     `json:"content"`
	Tags        []string   `json:"tags"`
	// Deleted: the proposal is a forget.
	Deleted    bool       `json:"deleted"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
	Supersedes []string   `json:"supersedes,omitempty"`
	Similar    []Similar  `json:"similar,omitempty"`
	State      string     `json:"state"`
	CreatedAt  time.Time  `json:"created_at"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	// Version is the version an approval wrote.
	Version int `json:"version,omitempty"`
}

// Similar names an existing live entry whose text closely matches a new
// one: a hint that the writer may mean to update it instead.
type Similar struct {
	Slug  string  `json:"slug"`
	Title string  `json:"title"`
	Score float64 `json:"score"`
}
