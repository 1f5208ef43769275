//go:build last

// Overload in the load test: with admission control on (-last.zulassung),
// the server answers the excess 429 with Retry-After. Agents then wait and
// send the same request again, as a well-behaved client does; the retries
// are counted, and any 5xx is an error.

package lasttest

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// statusCounts are the overload answers the shared transport saw.
var statusCounts struct {
	rejected    atomic.Int64 // 429, retried after Retry-After
	serverError atomic.Int64 // 5xx
}

// countOverload counts the 429s and 5xx the shared transport sees
// (httpretry.On429 waits out the 429s).
func countOverload(resp *http.Response) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		statusCounts.rejected.Add(1)
	case resp.StatusCode >= 500:
		statusCounts.serverError.Add(1)
	}
}

// overloadCheck looks at the sweep: the saturation point is the first step
// reaching 90 % of the peak; with admission control on (-last.zulassung),
// the first step at four times it or more must keep 90 % of the peak. No
// step may see a 5xx. Other steps, and every step without admission
// control, are shown for information: without it nothing protects the
// server from the excess, which is what the check is about.
func overloadCheck(t testing.TB, steps []int, rates []float64, serverErrors int64) {
	peak, sat := 0.0, 0
	for _, r := range rates {
		peak = max(peak, r)
	}
	for i, r := range rates {
		if r >= 0.9*peak {
			sat = steps[i]
			break
		}
	}
	fmt.Printf("Sättigung: %d Agenten (erste Stufe mit ≥ 90 %% der Spitze %.0f Aufrufe/s)\n", sat, peak)
	checked := false
	for i, n := range steps {
		if n < 4*sat {
			continue
		}
		share := rates[i] / peak
		fmt.Printf("Überlast: %d Agenten (%.0f × Sättigung): %.0f Aufrufe/s = %.0f %% der Spitze\n", n, float64(n)/float64(sat), rates[i], 100*share)
		if !checked && share < 0.9 && *lastZulassung >= 0 {
			t.Errorf("Stufe %d (≥ 4 × Sättigung): %.0f %% der Spitze, verlangt sind mindestens 90 %%", n, 100*share)
		}
		checked = true
	}
	if !checked {
		fmt.Printf("Überlast: keine Stufe bei ≥ 4 × Sättigung (%d) — größere Stufen angeben\n", 4*sat)
	}
	if serverErrors > 0 {
		t.Errorf("%d Antworten mit 5xx", serverErrors)
	}
}
