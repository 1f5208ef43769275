package service

import (
	"context"
	"log/slog"

	"munin/internal/memory"
)

// Budgeted is a DataStore whose Append first takes the write from its
// project's write budget (budget.go). It is the one place a budget is
// counted: a single server wraps its own store in it (New does); in a
// cluster each node wraps the store of the workspaces it owns
// (NewOwnerBudgeted) and every node's service sends its writes through to
// the owner (Options.BudgetAtOwner), so a project's writes through all
// nodes count against one budget.
type Budgeted struct {
	DataStore
	budget     *budget
	off        bool
	onRejected func()
	log        *slog.Logger
}

// NewBudgeted counts opts' write budgets (DefaultWriteBudget,
// DefaultWriteBudgetBytes, MaxContent for the pace, Now, OnBudgetRejected,
// Logger; BudgetOff lets every write through) over data's writes, with the
// projects' own limits from control, read once per project and hour and
// again after Forget: a single server, which changes them itself.
func NewBudgeted(control ControlStore, data DataStore, opts Options) *Budgeted {
	return newBudgeted(control, data, opts, false)
}

// NewOwnerBudgeted is NewBudgeted for the workspaces a cluster node owns:
// it reads a project's limits on every write (control data is a cache on a
// cluster node, so that costs a map lookup), because a budget set through
// any node must count at once.
func NewOwnerBudgeted(control ControlStore, data DataStore, opts Options) *Budgeted {
	return newBudgeted(control, data, opts, true)
}

func newBudgeted(control ControlStore, data DataStore, opts Options, freshLimits bool) *Budgeted {
	opts = opts.withDefaults()
	b := newBudget(Split{ControlStore: control, DataStore: data},
		limits{writes: opts.DefaultWriteBudget, bytes: opts.DefaultWriteBudgetBytes}, opts.Now)
	b.paceFloor = 2 * opts.MaxContent
	b.freshLimits = freshLimits
	return &Budgeted{DataStore: data, budget: b, off: opts.BudgetOff, onRejected: opts.OnBudgetRejected, log: opts.Logger}
}

// Append takes the write from the budget, writes it, and gives it back if
// nothing was written (an error, or the replay of an idempotent retry).
func (d *Budgeted) Append(ctx context.Context, ref memory.ProjectRef, w memory.Write) (memory.WriteResult, error) {
	if d.off {
		return d.DataStore.Append(ctx, ref, w)
	}
	size := len(w.Content) // the byte budget counts content, as history's size does
	reserved, err := d.budget.reserve(ctx, ref, size)
	if err != nil {
		if res, ok := d.replayOverBudget(ctx, ref, w, err); ok {
			return res, nil
		}
		if refusedByBudget(err) && d.onRejected != nil {
			d.onRejected()
		}
		return memory.WriteResult{}, err
	}
	res, err := d.DataStore.Append(ctx, ref, w)
	if err != nil || res.Replayed {
		d.budget.release(ref, reserved, size)
	}
	return res, err
}

// replayOverBudget answers an idempotent retry whose first write went
// through even though the budget is now used up: a retry writes nothing, so
// it must not be refused for a budget it does not spend. A failed lookup
// leaves the budget's answer standing.
func (d *Budgeted) replayOverBudget(ctx context.Context, ref memory.ProjectRef, w memory.Write, budgetErr error) (memory.WriteResult, bool) {
	if w.IdempotencyKey == "" || !refusedByBudget(budgetErr) {
		return memory.WriteResult{}, false
	}
	res, ok, err := d.DataStore.Replay(ctx, ref, w.Slug, w.IdempotencyKey)
	if err != nil {
		d.log.Error("idempotency lookup failed", "project", ref.String(), "slug", w.Slug, "err", err)
		return memory.WriteResult{}, false
	}
	return res, ok
}

// refusedByBudget tells a write the budget refused (used up, or larger than
// the whole byte budget) from a failure to read the budget.
func refusedByBudget(err error) bool {
	c := memory.ErrorCode(err)
	return c == memory.CodeBudgetExhausted || c == memory.CodeTooLarge
}

// BudgetUsage reports the project's writes and content bytes this hour and
// its limits, as the budget counts them (writes in flight included).
func (d *Budgeted) BudgetUsage(ctx context.Context, ref memory.ProjectRef) (BudgetUsage, error) {
	w, err := d.budget.usage(ctx, ref)
	if err != nil {
		return BudgetUsage{}, err
	}
	return BudgetUsage{Writes: w.used, Bytes: w.bytes, WriteLimit: w.limit.writes, ByteLimit: w.limit.bytes}, nil
}

// Forget drops what the budget holds of a project, so its next write reads
// the project's limits and count again (after a budget change).
func (d *Budgeted) Forget(ref memory.ProjectRef) { d.budget.forget(ref) }

// ForgetWorkspace drops what the budget holds of a workspace's projects:
// its file was opened anew (a cluster node owns it again after others did),
// so the next write counts the hour again from its audit log.
func (d *Budgeted) ForgetWorkspace(ws string) { d.budget.forgetWorkspace(ws) }
