package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestImportStatementsArePreparedOnce is TestStatementsArePreparedOnce for
// the statements stage 11 added to export and import: reading proposals
// with the versions, writing valid_until and supersedes, settling
// superseded_by, finding, inserting and deciding imported proposals.
func TestImportStatementsArePreparedOnce(t *testing.T) {
	s, ref, ws := openWorkspace(t)
	var compiled atomic.Int64
	for _, db := range []*sql.DB{ws.pool.reader, ws.pool.writer} {
		countCompiles(t, db, &compiled)
	}
	ctx := context.Background()
	old := time.Now().Add(-48 * time.Hour)
	put(t, s, ref, "live", "content")
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "p", Content: "proposed", Agent: "pia", Review: memory.ProposeAlways}); err != nil {
		t.Fatal(err)
	}
	batch := func(i int, state string) ImportBatch {
		at := old.Add(time.Duration(i) * time.Minute)
		until := at.Add(time.Hour)
		p := memory.Proposal{Slug: fmt.Sprintf("imp/p%02d", i), Content: "proposed", Agent: "pia", State: state, CreatedAt: at}
		if state == memory.ProposalRejected {
			p.DecidedBy, p.DecidedAt, p.Reason = "rita", &until, "no"
		}
		return ImportBatch{
			Versions: []memory.Version{
				{Slug: fmt.Sprintf("imp/a%02d", i), Version: 1, Content: "new", Agent: "a", CreatedAt: at,
					ValidUntil: &until, Supersedes: []string{fmt.Sprintf("imp/b%02d", i)}},
				{Slug: fmt.Sprintf("imp/b%02d", i), Version: 1, Content: "old", Agent: "a", CreatedAt: at.Add(-time.Second)},
			},
			Proposals: []memory.Proposal{p},
		}
	}
	nop := func(memory.Version) error { return nil }
	nopP := func(memory.Proposal) error { return nil }
	cases := []stmtCase{
		{"ScanExport", func(i int) error { return s.ScanExport(ctx, ref, nop, nopP) }},
		{"Import", func(i int) error {
			_, err := s.Import(ctx, ref, batch(i, memory.ProposalPending), memory.DefaultMaxContent)
			return err
		}},
		{"Import again, deciding", func(i int) error {
			_, err := s.Import(ctx, ref, batch(i, memory.ProposalRejected), memory.DefaultMaxContent)
			return err
		}},
	}
	// compilesIn runs c with i in [from, to) and counts what SQLite compiled.
	compilesIn := func(c stmtCase, from, to int) int64 {
		before := compiled.Load()
		for i := from; i < to; i++ {
			if err := c.run(i); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		return compiled.Load() - before
	}
	for _, c := range cases {
		compilesIn(c, 0, 2) // the first runs prepare, on each path
		if n := compilesIn(c, 2, 12); n != 0 {
			t.Errorf("%s: SQLite compiled again in 10 more runs (%d authorizer calls)", c.name, n)
		}
	}
	v, _, err := s.Get(ctx, ref, "imp/b05", 0)
	if err != nil || v.SupersededBy != "imp/a05" {
		t.Fatalf("imp/b05 after the imports: %+v, %v; want superseded by imp/a05", v, err)
	}
}
