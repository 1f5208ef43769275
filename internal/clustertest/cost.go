//go:build cluster

// What a throughput phase costs: CPU time by part (from /proc: the test
// process with the agents and the embedded etcd members, the Munin nodes,
// their Litestream sidecars) and, on the cluster, how many writes one replica
// confirmation acknowledged (from the nodes' /metrics). On two shared cores
// the throughput moves by a third between runs; the CPU per remember and the
// writes per confirmation move far less and tell where the time goes.

package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"munin/internal/cpuuse"
)

// Parts of the CPU report, in print order.
var costParts = []string{"Litestream", "Munin", "Test (Agenten, etcd)"}

// cpuByPart is the CPU time used so far by this process and its descendants,
// by part; nil where /proc is missing.
func cpuByPart() map[string]time.Duration {
	procs, err := cpuuse.Tree(os.Getpid())
	if err != nil {
		return nil
	}
	out := map[string]time.Duration{}
	for i, p := range procs {
		switch {
		case i == 0:
			out[costParts[2]] += p.CPU
		case p.Command == "litestream":
			out[costParts[0]] += p.CPU
		default:
			out[costParts[1]] += p.CPU
		}
	}
	return out
}

// ackCounts sums munin_replica_ack_writes (its _sum: writes, its _count:
// confirmations) over the nodes' /metrics, read with a server-admin token.
func ackCounts(nodes []*node, token string) (writes, confirmations float64, err error) {
	for _, n := range nodes {
		w, c, err := nodeAcks(n.advertise(), token)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", n.name, err)
		}
		writes, confirmations = writes+w, confirmations+c
	}
	return writes, confirmations, nil
}

func nodeAcks(base, token string) (writes, confirmations float64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("GET /metrics: %w", err)
	}
	f := families["munin_replica_ack_writes"]
	if f == nil || len(f.GetMetric()) != 1 {
		return 0, 0, fmt.Errorf("GET /metrics: no munin_replica_ack_writes")
	}
	h := f.GetMetric()[0].GetHistogram()
	return h.GetSampleSum(), float64(h.GetSampleCount()), nil
}

// phaseCost is what one throughput phase used: CPU by part and, on the
// cluster, writes per replica confirmation (0: not measured).
type phaseCost struct {
	acks     int
	cpu      map[string]time.Duration
	perAck   float64
	measured bool // cpu is known
}

// costLine prints a phase's CPU per acknowledged remember, by part.
func costLine(w io.Writer, label string, c phaseCost) {
	if !c.measured || c.acks == 0 {
		fmt.Fprintf(w, "CPU je remember, %s: nicht gemessen (kein /proc)\n", label)
		return
	}
	var total time.Duration
	parts := make([]string, 0, len(costParts))
	for _, p := range costParts {
		total += c.cpu[p]
		if d := c.cpu[p]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p, (d/time.Duration(c.acks)).Microseconds()))
		}
	}
	line := fmt.Sprintf("CPU je remember, %s: %d µs (%s)", label, (total / time.Duration(c.acks)).Microseconds(), strings.Join(parts, ", "))
	if c.perAck > 0 {
		line += strings.Replace(fmt.Sprintf("; %.1f Schreibvorgänge je Replikbestätigung", c.perAck), ".", ",", 1)
	}
	fmt.Fprintln(w, line)
}
