package remote

import (
	"context"
	"log/slog"

	"munin/internal/memory"
	"munin/internal/service"
)

// The proposal methods of service.ReviewStore: each goes to the owner of the
// proposal's workspace, where its proposals and its writer live.

type reviewSetArgs struct {
	Ref    memory.ProjectRef
	Review string
}

type proposalsArgs struct {
	Ref          memory.ProjectRef
	State, Agent string
	After        int64
	Limit        int
}

type proposalsReply struct {
	Proposals []memory.Proposal
	Current   []int
}

type pendingOfArgs struct {
	Ref   memory.ProjectRef
	Agent string
}

type proposalArgs struct {
	Ref memory.ProjectRef
	ID  int64
}

type proposalReply struct {
	P       memory.Proposal
	Current int
}

type approveArgs struct {
	Ref      memory.ProjectRef
	ID       int64
	Reviewer string
	Edit     memory.Write
}

type similarNoteArgs struct {
	Ref     memory.ProjectRef
	ID      int64
	Similar []memory.Similar
}

type rejectArgs struct {
	Ref                      memory.ProjectRef
	ID                       int64
	Reviewer, Client, Reason string
}

// inProject sets the project of proposals read over the wire, which their
// JSON leaves out.
func inProject(ref memory.ProjectRef, ps []memory.Proposal) []memory.Proposal {
	for i := range ps {
		ps[i].Project = ref
	}
	return ps
}

func (r *Router) SetReview(ctx context.Context, ref memory.ProjectRef, review string) error {
	_, err := on(ctx, r, ref.Workspace, func(b Backend) (bool, error) { return true, b.SetReview(ctx, ref, review) })
	return err
}

func (r *Router) Review(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (string, error) { return b.Review(ctx, ref) })
}

func (r *Router) Proposals(ctx context.Context, ref memory.ProjectRef, state, agent string, after int64, limit int) ([]memory.Proposal, []int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (proposalsReply, error) {
		ps, cur, err := b.Proposals(ctx, ref, state, agent, after, limit)
		return proposalsReply{ps, cur}, err
	})
	return out.Proposals, out.Current, err
}

func (r *Router) Proposal(ctx context.Context, ref memory.ProjectRef, id int64) (memory.Proposal, int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (proposalReply, error) {
		p, cur, err := b.Proposal(ctx, ref, id)
		return proposalReply{p, cur}, err
	})
	return out.P, out.Current, err
}

func (r *Router) PendingCount(ctx context.Context, ref memory.ProjectRef) (int, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (int, error) { return b.PendingCount(ctx, ref) })
}

func (r *Router) PendingOf(ctx context.Context, ref memory.ProjectRef, agent string) ([]memory.Proposal, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.Proposal, error) { return b.PendingOf(ctx, ref, agent) })
}

func (r *Router) Approve(ctx context.Context, ref memory.ProjectRef, id int64, reviewer string, edit memory.Write) (memory.WriteResult, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (memory.WriteResult, error) { return b.Approve(ctx, ref, id, reviewer, edit) })
}

func (r *Router) Reject(ctx context.Context, ref memory.ProjectRef, id int64, reviewer, client, reason string) (memory.Proposal, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (memory.Proposal, error) { return b.Reject(ctx, ref, id, reviewer, client, reason) })
}

func (r *Router) NoteSimilar(ctx context.Context, ref memory.ProjectRef, id int64, similar []memory.Similar) error {
	_, err := on(ctx, r, ref.Workspace, func(b Backend) (bool, error) { return true, b.NoteSimilar(ctx, ref, id, similar) })
	return err
}

func (n node) NoteSimilar(ctx context.Context, ref memory.ProjectRef, id int64, similar []memory.Similar) error {
	_, err := invoke[similarNoteArgs, bool](ctx, n, "NoteSimilar", similarNoteArgs{ref, id, similar})
	return err
}

func (n node) SetReview(ctx context.Context, ref memory.ProjectRef, review string) error {
	_, err := invoke[reviewSetArgs, bool](ctx, n, "SetReview", reviewSetArgs{ref, review})
	return err
}

func (n node) Review(ctx context.Context, ref memory.ProjectRef) (string, error) {
	return invoke[refArgs, string](ctx, n, "Review", refArgs{ref})
}

func (n node) Proposals(ctx context.Context, ref memory.ProjectRef, state, agent string, after int64, limit int) ([]memory.Proposal, []int, error) {
	r, err := invoke[proposalsArgs, proposalsReply](ctx, n, "Proposals", proposalsArgs{ref, state, agent, after, limit})
	return inProject(ref, r.Proposals), r.Current, err
}

func (n node) Proposal(ctx context.Context, ref memory.ProjectRef, id int64) (memory.Proposal, int, error) {
	r, err := invoke[proposalArgs, proposalReply](ctx, n, "Proposal", proposalArgs{ref, id})
	r.P.Project = ref
	return r.P, r.Current, err
}

func (n node) PendingCount(ctx context.Context, ref memory.ProjectRef) (int, error) {
	return invoke[refArgs, int](ctx, n, "PendingCount", refArgs{ref})
}

func (n node) PendingOf(ctx context.Context, ref memory.ProjectRef, agent string) ([]memory.Proposal, error) {
	ps, err := invoke[pendingOfArgs, []memory.Proposal](ctx, n, "PendingOf", pendingOfArgs{ref, agent})
	return inProject(ref, ps), err
}

func (n node) Approve(ctx context.Context, ref memory.ProjectRef, id int64, reviewer string, edit memory.Write) (memory.WriteResult, error) {
	r, err := invoke[approveArgs, writeResult](ctx, n, "Approve", approveArgs{ref, id, reviewer, edit})
	return r.result(), err
}

func (n node) Reject(ctx context.Context, ref memory.ProjectRef, id int64, reviewer, client, reason string) (memory.Proposal, error) {
	p, err := invoke[rejectArgs, memory.Proposal](ctx, n, "Reject", rejectArgs{ref, id, reviewer, client, reason})
	p.Project = ref
	return p, err
}

// reviewMethods adds the server sides of the proposal methods. An approval
// forwarded to this owner queues its index refresh here before it answers,
// as a forwarded Append does (methods.go): the router of the node that
// forwarded it has nothing to send for Queue.
func reviewMethods(d Data, x service.Index, log *slog.Logger, m map[string]handler) {
	serve(m, "NoteSimilar", func(ctx context.Context, a similarNoteArgs) (bool, error) {
		return true, d.NoteSimilar(ctx, a.Ref, a.ID, a.Similar)
	})
	serve(m, "SetReview", func(ctx context.Context, a reviewSetArgs) (bool, error) {
		return true, d.SetReview(ctx, a.Ref, a.Review)
	})
	serve(m, "Review", func(ctx context.Context, a refArgs) (string, error) { return d.Review(ctx, a.Ref) })
	serve(m, "Proposals", func(ctx context.Context, a proposalsArgs) (proposalsReply, error) {
		ps, cur, err := d.Proposals(ctx, a.Ref, a.State, a.Agent, a.After, a.Limit)
		return proposalsReply{ps, cur}, err
	})
	serve(m, "Proposal", func(ctx context.Context, a proposalArgs) (proposalReply, error) {
		p, cur, err := d.Proposal(ctx, a.Ref, a.ID)
		return proposalReply{p, cur}, err
	})
	serve(m, "PendingCount", func(ctx context.Context, a refArgs) (int, error) { return d.PendingCount(ctx, a.Ref) })
	serve(m, "PendingOf", func(ctx context.Context, a pendingOfArgs) ([]memory.Proposal, error) {
		return d.PendingOf(ctx, a.Ref, a.Agent)
	})
	serve(m, "Approve", func(ctx context.Context, a approveArgs) (writeResult, error) {
		res, err := d.Approve(ctx, a.Ref, a.ID, a.Reviewer, a.Edit)
		if err == nil {
			queueApproved(x, log, a.Ref, res.Slug)
		}
		return wireResult(res), err
	})
	serve(m, "Reject", func(ctx context.Context, a rejectArgs) (memory.Proposal, error) {
		return d.Reject(ctx, a.Ref, a.ID, a.Reviewer, a.Client, a.Reason)
	})
}

// queueApproved queues the refresh of an approved proposal's entry.
func queueApproved(x service.Index, log *slog.Logger, ref memory.ProjectRef, slug string) {
	if err := x.Queue(ref, slug); err != nil {
		log.Error("index refresh not queued", "project", ref.String(), "slug", slug, "err", err)
	}
}
