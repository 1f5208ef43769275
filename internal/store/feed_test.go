package store

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

var fctx = context.Background()

// feedOf reads ws for the given projects, all visible, after a position.
func feedOf(t testing.TB, s *Store, ws string, q memory.FeedQuery, projects ...string) memory.FeedPage {
	t.Helper()
	for _, p := range projects {
		q.Projects = append(q.Projects, memory.FeedProject{Project: p})
	}
	page, err := s.FeedRead(fctx, ws, q)
	if err != nil {
		t.Fatalf("FeedRead %s %+v: %v", ws, q, err)
	}
	return page
}

func feedLines(rows []memory.FeedRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Project + ":" + r.Action + ":" + r.Slug
	}
	return out
}

// TestFeedReadPages: the rows of the asked projects after a position, in
// id order, bounded; Complete only when nothing was cut; EndOnly reads the
// end alone; another project of the workspace is not read.
func TestFeedReadPages(t *testing.T) {
	s := openTest(t)
	a, b := ensure(t, s, "ws", "a"), ensure(t, s, "ws", "b")
	other := ensure(t, s, "ws", "other")
	empty := feedOf(t, s, "ws", memory.FeedQuery{}, "a")
	if empty.Identity == "" || len(empty.Identity) != 16 || empty.EndID != 0 || !empty.Complete || len(empty.Rows) != 0 {
		t.Fatalf("empty workspace: %+v", empty)
	}
	put(t, s, a, "a1", "x")
	put(t, s, other, "o1", "secret slug of another project")
	put(t, s, b, "b1", "x")
	put(t, s, a, "a1", "y")
	if _, err := s.Append(fctx, b, memory.Write{Slug: "b1", Deleted: true, Agent: "tester"}); err != nil {
		t.Fatal(err)
	}

	all := feedOf(t, s, "ws", memory.FeedQuery{}, "a", "b")
	want := []string{"a:remember:a1", "b:remember:b1", "a:remember:a1", "b:forget:b1"}
	if got := feedLines(all.Rows); !slices.Equal(got, want) || !all.Complete || all.Identity != empty.Identity {
		t.Fatalf("all rows %v complete %v, want %v complete", got, all.Complete, want)
	}
	if all.EndID != 5 || all.Rows[2].Version != 2 || all.Rows[3].Version != 2 || all.Rows[3].Agent != "tester" {
		t.Errorf("end %d, rows %+v", all.EndID, all.Rows)
	}
	for i := 1; i < len(all.Rows); i++ {
		if all.Rows[i].ID <= all.Rows[i-1].ID {
			t.Errorf("rows not in id order: %+v", all.Rows)
		}
	}

	first := feedOf(t, s, "ws", memory.FeedQuery{Limit: 2}, "a", "b")
	if got := feedLines(first.Rows); !slices.Equal(got, want[:2]) || first.Complete {
		t.Fatalf("limit 2: %v complete %v, want %v not complete", got, first.Complete, want[:2])
	}
	last := first.Rows[1]
	rest := feedOf(t, s, "ws", memory.FeedQuery{Identity: first.Identity, After: last.ID, Stamp: last.At.UnixNano(), Limit: 2}, "a", "b")
	if got := feedLines(rest.Rows); !slices.Equal(got, want[2:]) || rest.Complete {
		t.Fatalf("after %d: %v, want %v (exactly the limit: not known complete)", last.ID, got, want[2:])
	}
	end := feedOf(t, s, "ws", memory.FeedQuery{Identity: first.Identity, After: last.ID, Stamp: last.At.UnixNano(), EndOnly: true}, "a")
	if len(end.Rows) != 0 || end.EndID != all.EndID || end.EndStamp != all.EndStamp {
		t.Errorf("EndOnly: %+v, want no rows and end %d", end, all.EndID)
	}
	if _, err := s.FeedRead(fctx, "ws", memory.FeedQuery{Projects: []memory.FeedProject{{Project: "nope"}}}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("a project that does not exist: %v, want not_found", err)
	}
}

// TestFeedFloor: a workspace new to a cursor is read from the floor time
// on; once a position is known, the floor no longer applies.
func TestFeedFloor(t *testing.T) {
	s := openTest(t)
	a := ensure(t, s, "ws", "a")
	put(t, s, a, "old", "x")
	floor := time.Now()
	time.Sleep(2 * time.Millisecond) // the next row's time is after floor
	put(t, s, a, "new", "x")
	page := feedOf(t, s, "ws", memory.FeedQuery{Floor: floor}, "a")
	if got := feedLines(page.Rows); !slices.Equal(got, []string{"a:remember:new"}) {
		t.Fatalf("from floor: %v, want only the new row", got)
	}
	first := feedOf(t, s, "ws", memory.FeedQuery{}, "a").Rows[0]
	page = feedOf(t, s, "ws", memory.FeedQuery{After: first.ID, Stamp: first.At.UnixNano(), Floor: time.Now().Add(time.Hour)}, "a")
	if got := feedLines(page.Rows); !slices.Equal(got, []string{"a:remember:new"}) {
		t.Errorf("after a position the floor is ignored: %v", got)
	}
}

// TestFeedVisibility: for a key that does not review, the proposal rows of
// other agents (propose, their rejection) are left out, its own proposal
// and the rejection of it are not; an approval is everybody's. A reviewer
// sees all.
func TestFeedVisibility(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "base", "x")
	mine := propose(t, s, ref, "pia", "mine", "x")
	theirs := propose(t, s, ref, "otto", "theirs", "x")
	approved := propose(t, s, ref, "otto", "approved", "x")
	if _, err := s.Reject(fctx, ref, mine.Proposal, "rita", "", "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(fctx, ref, theirs.Proposal, "rita", "", "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(fctx, ref, approved.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	read := func(p memory.FeedProject) []string {
		p.Project = "p"
		page, err := s.FeedRead(fctx, "ws", memory.FeedQuery{Projects: []memory.FeedProject{p}})
		if err != nil {
			t.Fatal(err)
		}
		return feedLines(page.Rows)
	}
	pia := read(memory.FeedProject{Viewer: "pia", Private: true})
	want := []string{"p:remember:base", "p:propose:mine", "p:reject:mine", "p:approve:approved"}
	if !slices.Equal(pia, want) {
		t.Errorf("pia (propose key) reads %v, want %v", pia, want)
	}
	reed := read(memory.FeedProject{Viewer: "reed", Private: true})
	if want := []string{"p:remember:base", "p:approve:approved"}; !slices.Equal(reed, want) {
		t.Errorf("reed (read key) reads %v, want %v", reed, want)
	}
	rita := read(memory.FeedProject{Viewer: "rita"})
	if len(rita) != 7 {
		t.Errorf("rita (reviewer) reads %v, want all 7 rows", rita)
	}
}

// TestFeedExpired: a position of a file restored from an older copy (its
// ids given out again), of a file created anew, or past the end is
// refused as expired; a position of the same file survives the store's
// restart.
func TestFeedExpired(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "x")
	backup := filepath.Join(t.TempDir(), "old.db")
	if _, err := rawDB(t, s.WorkspaceFile("ws")).Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	put(t, s, ref, "b", "x")
	page := feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	last := page.Rows[len(page.Rows)-1]
	pos := memory.FeedQuery{Identity: page.Identity, After: last.ID, Stamp: last.At.UnixNano()}

	// Restart: the same file, the same position.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	put(t, s, ref, "c", "x")
	if got := feedLines(feedOf(t, s, "ws", pos, "p").Rows); !slices.Equal(got, []string{"p:remember:c"}) {
		t.Fatalf("after a restart: %v, want c alone", got)
	}

	expired := func(what string, q memory.FeedQuery) {
		t.Helper()
		q.Projects = []memory.FeedProject{{Project: "p"}}
		_, err := s.FeedRead(fctx, "ws", q)
		if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "expired or foreign cursor") {
			t.Errorf("%s: %v, want invalid naming an expired cursor", what, err)
		}
	}
	expired("past the end", memory.FeedQuery{Identity: page.Identity, After: 99, Stamp: 1})
	expired("another row's time", memory.FeedQuery{Identity: page.Identity, After: last.ID, Stamp: last.At.UnixNano() + 1})

	// Restored from the copy taken after a: ids 2 and on are given out again.
	replace := func(src string) {
		t.Helper()
		replaceFile(t, s, "ws", src)
	}
	replace(backup)
	put(t, s, ref, "d", "x")
	put(t, s, ref, "e", "x")
	expired("restored from an older copy", pos)
	if got := feedOf(t, s, "ws", memory.FeedQuery{}, "p"); got.Identity != page.Identity {
		t.Errorf("a restored copy has identity %s, want the file's %s", got.Identity, page.Identity)
	}

	// Deleted and created anew: another identity, even before any write.
	replace("")
	fresh := feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	if fresh.Identity == page.Identity || fresh.EndID != 0 {
		t.Fatalf("a file created anew: %+v, want a new identity and no rows", fresh)
	}
	expired("a file created anew", memory.FeedQuery{Identity: page.Identity})
}

// TestFeedPlan: each project's read is a range scan of the (project, id)
// index, whatever other projects wrote; and the feed's statements are
// prepared once.
func TestFeedPlan(t *testing.T) {
	s, ref, ws := openWorkspace(t)
	plan := strings.Join(queryPlan(t, ws.pool.reader, feedRowsSQL+feedPrivateSQL+` ORDER BY id LIMIT +?`, "p", 0, 10, 0, "v", 5), "; ")
	if !strings.Contains(plan, "USING INDEX audit_log_project_id (project=? AND id>? AND id<?)") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("feed read plan: %s", plan)
	}
	if plan := strings.Join(queryPlan(t, ws.pool.reader, feedEndSQL, 5), "; "); !strings.Contains(plan, "USING INTEGER PRIMARY KEY (rowid<?)") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("feed end plan: %s", plan)
	}
	var compiled atomic.Int64
	countCompiles(t, ws.pool.reader, &compiled)
	for i := range 12 {
		put(t, s, ref, "a", "x")
		if i == 2 {
			compiled.Store(0)
		}
		q := memory.FeedQuery{Projects: []memory.FeedProject{{Project: "p", Viewer: "v", Private: i%2 == 0}}, Limit: i + 1}
		if _, err := s.FeedRead(fctx, "ws", q); err != nil {
			t.Fatal(err)
		}
	}
	if n := compiled.Load(); n != 0 {
		t.Errorf("feed reads compiled statements again (%d authorizer calls)", n)
	}
}

// TestFeedSecret: drawn once, kept across a restart, another per server.
func TestFeedSecret(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	one, err := s.FeedSecret(fctx)
	if err != nil || len(one) != 32 {
		t.Fatalf("FeedSecret: %x, %v", one, err)
	}
	if again, _ := s.FeedSecret(fctx); string(again) != string(one) {
		t.Error("the secret changed between two calls")
	}
	// Cached once read: a later call reads no control row (a changes call
	// and each stream's read ask for it).
	if _, err := s.control.writer.ExecContext(fctx, `DELETE FROM settings WHERE k = ?`, feedSecretKey); err != nil {
		t.Fatal(err)
	}
	if cached, err := s.FeedSecret(fctx); err != nil || string(cached) != string(one) {
		t.Errorf("after the row is gone: %x, %v; want the cached secret", cached, err)
	}
	if _, err := s.control.writer.ExecContext(fctx, `INSERT INTO settings (k, v) VALUES (?, ?)`, feedSecretKey, hex.EncodeToString(one)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := openAt(t, dir).FeedSecret(fctx); string(after) != string(one) {
		t.Error("the secret changed across a restart")
	}
	if other, _ := openTest(t).FeedSecret(fctx); string(other) == string(one) {
		t.Error("two servers drew the same secret")
	}
}
