package service

import (
	"math"
	"time"
)

// pace is a token bucket of bytes: it holds at most burst and refills at
// perSecond. It is not rate.Limiter because a write gives its bytes back
// after the store call, and rate.Reservation's Cancel restores nothing once
// the reservation's time to act has passed (it always has: the write was
// taken at once). The caller holds budget.mu.
type pace struct {
	perSecond float64
	burst     float64
	tokens    float64
	last      time.Time
}

func newPace(perSecond float64, burst int) *pace {
	return &pace{perSecond: perSecond, burst: float64(burst), tokens: float64(burst)}
}

// fill adds the refill since the last call, up to burst. A clock that went
// back refills nothing.
func (p *pace) fill(now time.Time) {
	if !p.last.IsZero() && now.After(p.last) {
		p.tokens = math.Min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.perSecond)
	}
	if p.last.IsZero() || now.After(p.last) {
		p.last = now
	}
}

// take takes n bytes now, or reports how long until they are there (never
// for n beyond the burst: ok false).
func (p *pace) take(now time.Time, n int) (wait time.Duration, ok bool) {
	if float64(n) > p.burst {
		return 0, false
	}
	p.fill(now)
	if short := float64(n) - p.tokens; short > 0 {
		if p.perSecond <= 0 {
			return 0, false
		}
		return time.Duration(math.Ceil(short / p.perSecond * float64(time.Second))), true
	}
	p.tokens -= float64(n)
	return 0, true
}

// give puts n bytes taken earlier back, up to burst.
func (p *pace) give(now time.Time, n int) {
	p.fill(now)
	p.tokens = math.Min(p.burst, p.tokens+float64(n))
}
