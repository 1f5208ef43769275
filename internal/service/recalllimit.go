package service

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"munin/internal/limit"
	"munin/internal/memory"
)

// Defaults of the per-key recall limits (Options.RecallRate, RecallBurst,
// RecallConcurrency). An agent thinks between calls and recalls a few times
// a minute; 10 a second with a burst of 50 leaves it room, while one key can
// no longer fill the search log or keep the CPU busy for everyone.
const (
	DefaultRecallRate        = 10
	DefaultRecallBurst       = 50
	DefaultRecallConcurrency = 4
)

// The limits of a project (all its keys together) follow from the per-key
// ones, so that a project admin who mints a hundred keys does not multiply
// them: a project recalls at most ProjectRecallFactor times one key's rate,
// and runs its recalls and heavy pages on at most half the cores at once
// (ProjectRecallRunning) — the other half is always left to the other
// projects. A project's recall beyond its running share waits up to
// ProjectRecallWait for a place (its own agents queue behind each other;
// the wait holds one of the project's requests in flight, which have their
// own share of the server), then is refused.
const (
	ProjectRecallFactor = 5
	ProjectRecallWait   = 2 * time.Second
)

// ProjectRecallRunning is how many recalls (and CPU-heavy web pages) of one
// project run at once: half the cores, at least one.
func ProjectRecallRunning() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// recallLimiter bounds recalls per key — a token bucket and a number running
// at once, both refused at once with budget_exhausted and a Retry-After
// rather than queued: a waiting recall would hold its connection and one of
// the server's admission slots, so one key's excess would still crowd out
// the others — and per project: a rate (refused) and a number running
// (waited for, see ProjectRecallWait).
type recallLimiter struct {
	perKey         *limit.Keyed[int64]
	projectRate    *limit.Keyed[memory.ProjectRef]
	projectRunning *limit.Keyed[memory.ProjectRef]
	wait           time.Duration
}

// recallRules are the limits of a recallLimiter; a zero field is no limit.
type recallRules struct {
	rate                  float64 // per key, per second
	burst                 int
	concurrent            int // per key
	projectRate           float64
	projectBurst          int
	projectConcurrent     int
	projectConcurrentWait time.Duration
}

func newRecallLimiter(r recallRules, now func() time.Time) *recallLimiter {
	return &recallLimiter{
		perKey:         limit.New[int64](limit.Rule{InFlight: r.concurrent, Rate: r.rate, Burst: r.burst}, now),
		projectRate:    limit.New[memory.ProjectRef](limit.Rule{Rate: r.projectRate, Burst: r.projectBurst}, now),
		projectRunning: limit.New[memory.ProjectRef](limit.Rule{InFlight: r.projectConcurrent}, now),
		wait:           r.projectConcurrentWait,
	}
}

// acquire admits one recall (or heavy page) of key or says why not; release
// must be called when an admitted one is done. It may wait (see
// ProjectRecallWait) while key's project runs its share.
func (l *recallLimiter) acquire(ctx context.Context, key memory.Key) (release func(), err error) {
	rel, refused := limit.Acquire(l.perKey.Slot(key.ID), l.projectRate.Slot(key.Project))
	if refused != nil {
		return nil, l.refusal(key, refused)
	}
	wctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	running, err := l.projectRunning.Wait(wctx, key.Project)
	if err != nil {
		rel()
		if ctx.Err() != nil {
			return nil, memory.Errorf(memory.CodeUnavailable, "recall cancelled while waiting for its project's turn")
		}
		e := memory.Errorf(memory.CodeBudgetExhausted, "project %s runs %d recalls at once, the most one project may, and none ended within %s; retry in 1 s",
			key.ProjectLabel(), l.projectRunning.Rule().InFlight, l.wait)
		e.RetryAfter = time.Second
		return nil, e
	}
	return func() { running(); rel() }, nil
}

// refusal is the error of a refused recall: which limit, and when to retry.
func (l *recallLimiter) refusal(key memory.Key, r *limit.Refusal) error {
	secs := max(1, int(math.Ceil(r.RetryAfter.Seconds())))
	var msg string
	switch {
	case r.Index == 0 && r.Verdict == limit.OverInFlight:
		msg = fmt.Sprintf("key %d (%s) may run %d recalls at once", key.ID, key.Agent, l.perKey.Rule().InFlight)
	case r.Index == 0:
		msg = fmt.Sprintf("key %d (%s) may recall %g times per second", key.ID, key.Agent, l.perKey.Rule().Rate)
	default:
		msg = fmt.Sprintf("project %s may recall %g times per second, all its keys together", key.ProjectLabel(), l.projectRate.Rule().Rate)
	}
	e := memory.Errorf(memory.CodeBudgetExhausted, "%s; retry in %d s", msg, secs)
	e.RetryAfter = time.Duration(secs) * time.Second
	return e
}

// size is the number of keys the limiter holds state for (tests).
func (l *recallLimiter) size() int { return l.perKey.Len() }

// recallLimiter builds the limiter the options ask for, defaults applied. A
// per-key limit switched off (negative) switches its project's off too.
func (o Options) recallLimiter() *recallLimiter {
	r := recallRules{rate: o.RecallRate, burst: o.RecallBurst, concurrent: o.RecallConcurrency,
		projectConcurrentWait: ProjectRecallWait}
	if r.rate == 0 {
		r.rate = DefaultRecallRate
	}
	if r.burst <= 0 {
		r.burst = DefaultRecallBurst
	}
	if r.concurrent == 0 {
		r.concurrent = DefaultRecallConcurrency
	}
	if r.rate > 0 {
		r.projectRate, r.projectBurst = ProjectRecallFactor*r.rate, ProjectRecallFactor*r.burst
	}
	if r.concurrent > 0 && o.ProjectRecallConcurrency >= 0 {
		r.projectConcurrent = cmp.Or(o.ProjectRecallConcurrency, ProjectRecallRunning())
	}
	return newRecallLimiter(r, o.Now)
}
