//go:build cluster

// Proposals in the cluster (issue 23): agents with a propose key remember
// over MCP like the others, and every acknowledged answer is a pending
// proposal, which lives in the workspace file and must follow its owner
// through every kill. The ledger keeps the acknowledged proposals and the
// reviewers' acknowledged decisions (review.go) beside the versions.

package clustertest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// proposePause is a proposer's pause after each acknowledged proposal: it
// keeps a project's pending queue well below its bound
// (memory.MaxPendingProposals) while a failover stops its reviewer.
const proposePause = 100 * time.Millisecond

// proposalAck is one acknowledged proposal.
type proposalAck struct {
	project string // workspace/project
	id      string // workspace.project.n
	slug    string
	content string
	agent   string
	base    int
	node    int // the node the proposal was sent to
	sent    time.Time
	done    time.Time
}

// decisionAck is one acknowledged approval or rejection.
type decisionAck struct {
	proposal proposalAck
	approved bool
	version  int    // written by an approval
	reason   string // of a rejection
	reviewer string
	node     int // the node the decision was sent to
	// owner is etcd's owner of the workspace when node was picked;
	// forwarded: etcd named another node than node as the owner then and
	// after the reviewer's batch of decisions.
	owner     string
	forwarded bool
	sent      time.Time
	done      time.Time
}

// ack is an approval as a write: the version it made must be there with
// the proposal's content, like any acknowledged version.
func (d decisionAck) ack() ack {
	return ack{project: d.proposal.project, slug: d.proposal.slug, version: d.version, content: d.proposal.content,
		agent: d.reviewer, node: d.node, sent: d.sent, done: d.done}
}

func (l *ledger) addProposal(p proposalAck) {
	l.mu.Lock()
	l.proposals = append(l.proposals, p)
	l.mu.Unlock()
}

func (l *ledger) addDecision(d decisionAck) {
	l.mu.Lock()
	l.decisions = append(l.decisions, d)
	l.mu.Unlock()
}

// reviewAcks returns copies of the acknowledged proposals and decisions.
func (l *ledger) reviewAcks() ([]proposalAck, []decisionAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.proposals), slices.Clone(l.decisions)
}

// approvalAcks are the acknowledged approvals as version acks.
func approvalAcks(ds []decisionAck) []ack {
	var out []ack
	for _, d := range ds {
		if d.approved {
			out = append(out, d.ack())
		}
	}
	return out
}

// pendingOf reads a proposing remember's answer: state pending, the
// proposal's id and its base version, and no version.
func pendingOf(m map[string]any) (written, error) {
	id, _ := m["proposal"].(string)
	base, hasBase := m["base_version"].(float64)
	if m["state"] != "pending" || id == "" || !hasBase || m["version"] != nil {
		return written{}, toolError{fmt.Sprintf("internal: a propose key's remember answered no pending proposal: %v", m)}
	}
	return written{proposal: id, base: int(base)}, nil
}

// proposalNumber is the number at the end of a proposal id
// (workspace.project.n), 0 if there is none.
func proposalNumber(id string) int64 {
	n, err := strconv.ParseInt(id[strings.LastIndex(id, ".")+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// proposers makes n proposing agents, at most one per project: proposer i
// works in project i and talks to node (i + 1) mod N.
func (c *cluster) proposers(t *testing.T, n int) []*agent {
	n = min(n, len(c.projects))
	if n <= 0 {
		return nil
	}
	tokens := c.keys(t, n, "propose", func(i int) (string, string) { return c.projects[i], fmt.Sprintf("vorschlag-%02d", i) })
	out := make([]*agent, n)
	for i := range n {
		node := (i + 1) % len(c.nodes)
		name := fmt.Sprintf("vorschlag-%02d", i)
		out[i] = newAgent(name, node, c.nodes[node].mcpURL(), tokens[i], c.projects[i], ownSlugs(name, *clusterSlugs))
		out[i].proposes = true
	}
	return out
}
