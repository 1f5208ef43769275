package limit

import (
	"math"
	"time"
)

// Bucket is a token bucket: it holds at most Burst tokens and refills at
// PerSecond. Unlike golang.org/x/time/rate it can give tokens back (a write
// returns its bytes when the store refused it; rate.Reservation's Cancel
// restores nothing once its time to act has passed). It is not safe for
// concurrent use: Keyed and the write budget call it under their own lock.
type Bucket struct {
	perSecond float64
	burst     float64
	tokens    float64
	last      time.Time
}

// NewBucket returns a full bucket.
func NewBucket(perSecond float64, burst int) *Bucket {
	return &Bucket{perSecond: perSecond, burst: float64(burst), tokens: float64(burst)}
}

// PerSecond is the refill rate the bucket was made with.
func (b *Bucket) PerSecond() float64 { return b.perSecond }

// fill adds the refill since the last call, up to burst. A clock that went
// back refills nothing.
func (b *Bucket) fill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSecond)
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

// Take takes n tokens now, or reports how long until they are there (never
// for n beyond the burst: ok false).
func (b *Bucket) Take(now time.Time, n int) (wait time.Duration, ok bool) {
	if float64(n) > b.burst {
		return 0, false
	}
	b.fill(now)
	if short := float64(n) - b.tokens; short > 0 {
		if b.perSecond <= 0 {
			return 0, false
		}
		return time.Duration(math.Ceil(short / b.perSecond * float64(time.Second))), true
	}
	b.tokens -= float64(n)
	return 0, true
}

// Give puts n tokens taken earlier back, up to burst.
func (b *Bucket) Give(now time.Time, n int) {
	b.fill(now)
	b.tokens = math.Min(b.burst, b.tokens+float64(n))
}

// Full reports whether the bucket has refilled completely by now: its state
// then says nothing a new bucket would not.
func (b *Bucket) Full(now time.Time) bool {
	b.fill(now)
	return b.tokens >= b.burst
}

// Changed is a bucket of a new rate and burst that keeps what was spent of
// this one: a limit changed back and forth must not hand out a fresh burst
// each time.
func (b *Bucket) Changed(now time.Time, perSecond float64, burst int) *Bucket {
	b.fill(now)
	return &Bucket{perSecond: perSecond, burst: float64(burst), tokens: math.Min(float64(burst), b.tokens), last: now}
}
