package service

import (
	"context"

	"munin/internal/memory"
)

// ReviewStore is the part of DataStore that keeps proposals and the
// project's settings, review and similar (stage 11). A proposal is made by Append (a
// memory.Write whose Review says so); these read and decide them. Ids are
// the store's row ids; one of another project is not_found.
type ReviewStore interface {
	// SetReview sets a project's review setting (memory.ReviewOff or
	// memory.ReviewAgents) through the workspace's writer.
	SetReview(ctx context.Context, ref memory.ProjectRef, review string) error
	// Review reads a project's review setting.
	Review(ctx context.Context, ref memory.ProjectRef) (string, error)
	// SetSimilar sets whether remember looks for duplicates of a new slug
	// in a project (memory.SimilarOn or memory.SimilarOff) through the
	// workspace's writer; every write after it reports the setting in
	// memory.WriteResult.SimilarOff.
	SetSimilar(ctx context.Context, ref memory.ProjectRef, similar string) error
	// SimilarSetting reads a project's similar setting.
	SimilarSetting(ctx context.Context, ref memory.ProjectRef) (string, error)
	// Proposals returns up to limit proposals with ids above after, oldest
	// first, filtered by state and agent ("" for all), and for each the
	// entry's latest version now.
	Proposals(ctx context.Context, ref memory.ProjectRef, state, agent string, after int64, limit int) ([]memory.Proposal, []int, error)
	// Proposal returns one proposal and the entry's latest version now.
	Proposal(ctx context.Context, ref memory.ProjectRef, id int64) (memory.Proposal, int, error)
	// PendingCount counts a project's proposals waiting for review.
	PendingCount(ctx context.Context, ref memory.ProjectRef) (int, error)
	// PendingOf returns agent's pending proposals in a project, newest
	// first, with what a recall shows of them (no Supersedes, no Similar):
	// one indexed read, cheap when there are none, as for most recalls.
	PendingOf(ctx context.Context, ref memory.ProjectRef, agent string) ([]memory.Proposal, error)
	// Approve applies a pending proposal as the next version (the proposer
	// its agent, reviewer in the audit row) and marks it approved, in one
	// transaction; edit carries ExpectedVersion and the reviewer's Title,
	// Content and Tags (empty, nil: the proposal's).
	Approve(ctx context.Context, ref memory.ProjectRef, id int64, reviewer string, edit memory.Write) (memory.WriteResult, error)
	// NoteSimilar records the duplicate hints of a pending proposal.
	NoteSimilar(ctx context.Context, ref memory.ProjectRef, id int64, similar []memory.Similar) error
	// Reject marks a pending proposal rejected with the reviewer's reason;
	// client is the reviewer's OAuth client for the audit row ("" for none).
	Reject(ctx context.Context, ref memory.ProjectRef, id int64, reviewer, client, reason string) (memory.Proposal, error)
}
