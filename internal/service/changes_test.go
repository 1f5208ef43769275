package service_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// maxPages bounds every paging loop of these tests.
const maxPages = 10000

// pageAll reads the feed from since on in pages of limit until a page is
// empty, and returns what it read and the last cursor.
func pageAll(t testing.TB, svc *service.Service, c memory.Caller, since string, limit int) ([]service.Change, string) {
	t.Helper()
	var all []service.Change
	for range maxPages {
		res, err := svc.Changes(ctx, c, service.ChangesRequest{Since: since, Limit: limit})
		if err != nil {
			t.Fatalf("Changes(since %q, limit %d): %v", since, limit, err)
		}
		if res.NextCursor == "" {
			t.Fatal("no next cursor")
		}
		since = res.NextCursor
		if len(res.Changes) == 0 {
			return all, since
		}
		if len(res.Changes) > limit {
			t.Fatalf("a page of %d changes, limit %d", len(res.Changes), limit)
		}
		all = append(all, res.Changes...)
	}
	t.Fatalf("no empty page after %d pages", maxPages)
	return nil, ""
}

// lines renders changes as "project kind slug vN" for comparisons.
func lines(cs []service.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s %s v%d", c.Project, c.Kind, c.Slug, c.Version)
	}
	return out
}

func feedWrite(t testing.TB, svc *service.Service, c memory.Caller, project, slug string) service.WriteResult {
	t.Helper()
	res, err := svc.Remember(ctx, c, service.RememberRequest{Project: project, Slug: slug, Content: "text of " + slug})
	if err != nil {
		t.Fatalf("remember %s %s: %v", project, slug, err)
	}
	return res
}

// TestChangesPagesAcrossWorkspaces: one caller with keys in two workspaces
// reads every change once, in every page size, each project in commit
// order; since=now gives no changes and the cursor from which the next
// write is read; the answer never carries content.
func TestChangesPagesAcrossWorkspaces(t *testing.T) {
	env := servicetest.New(t, service.Options{BudgetOff: true})
	tokA, a := env.Key(t, "acme", "one", "ann", memory.RoleWrite)
	tokB, b := env.Key(t, "beta", "two", "bob", memory.RoleWrite)
	both := env.Caller(t, tokA, tokB)
	var want []string
	for i := range 7 {
		feedWrite(t, env.Svc, a, "acme/one", fmt.Sprintf("a%d", i%3))
		feedWrite(t, env.Svc, b, "beta/two", fmt.Sprintf("b%d", i%2))
	}
	if _, err := env.Svc.Forget(ctx, a, service.ForgetRequest{Project: "acme/one", Slug: "a0"}); err != nil {
		t.Fatal(err)
	}
	all, _ := pageAll(t, env.Svc, both, "", 1000)
	if len(all) != 15 {
		t.Fatalf("read %d changes, want 15: %v", len(all), lines(all))
	}
	for _, c := range all {
		want = append(want, fmt.Sprintf("%s %s %s v%d", c.Project, c.Kind, c.Slug, c.Version))
		if c.Agent == "" || c.At.IsZero() || c.Version == 0 || (c.Kind != "remember" && c.Kind != "forget") {
			t.Errorf("change %+v", c)
		}
	}
	if last := all[len(all)-1]; last.Kind != "forget" || last.Slug != "a0" || last.Version != 4 || last.Agent != "ann" {
		t.Errorf("last change %+v, want ann's forget of a0 v4", last)
	}
	for _, limit := range []int{1, 2, 3, 5} {
		got, _ := pageAll(t, env.Svc, both, "", limit)
		if !slices.Equal(lines(got), want) {
			t.Errorf("pages of %d: %v, want %v", limit, lines(got), want)
		}
	}

	now, err := env.Svc.Changes(ctx, both, service.ChangesRequest{Since: "now"})
	if err != nil || len(now.Changes) != 0 || now.NextCursor == "" {
		t.Fatalf("since=now: %+v %v, want no changes and a cursor", now, err)
	}
	feedWrite(t, env.Svc, b, "beta/two", "fresh")
	res, err := env.Svc.Changes(ctx, both, service.ChangesRequest{Since: now.NextCursor})
	if err != nil || !slices.Equal(lines(res.Changes), []string{"beta/two remember fresh v1"}) {
		t.Fatalf("after since=now: %v %v, want the fresh write alone", lines(res.Changes), err)
	}
	body, _ := json.Marshal(res)
	if strings.Contains(string(body), "text of") {
		t.Errorf("the feed carries content: %s", body)
	}
	again, err := env.Svc.Changes(ctx, both, service.ChangesRequest{Since: res.NextCursor})
	if err != nil || len(again.Changes) != 0 {
		t.Errorf("read again from the next cursor: %v %v, want nothing", lines(again.Changes), err)
	}
}

// TestChangesBadInput: bad limits, garbled, edited and foreign cursors are
// invalid and name the problem; a server-admin key reads no feed; nothing
// is an internal error.
func TestChangesBadInput(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, a := env.Key(t, "acme", "one", "ann", memory.RoleWrite)
	feedWrite(t, env.Svc, a, "acme/one", "x")
	res, err := env.Svc.Changes(ctx, a, service.ChangesRequest{Since: "now"})
	if err != nil {
		t.Fatal(err)
	}
	other := servicetest.New(t, service.Options{})
	_, o := other.Key(t, "acme", "one", "ann", memory.RoleWrite)
	feedWrite(t, other.Svc, o, "acme/one", "x")
	foreign, err := other.Svc.Changes(ctx, o, service.ChangesRequest{Since: "now"})
	if err != nil {
		t.Fatal(err)
	}
	cur := res.NextCursor
	edited := cur[:len(cur)/2] + string(cur[len(cur)/2]^1) + cur[len(cur)/2+1:]
	for _, c := range []struct {
		name string
		req  service.ChangesRequest
		want string
	}{
		{"negative limit", service.ChangesRequest{Limit: -1}, "limit must be between 1 and 1000"},
		{"limit too large", service.ChangesRequest{Limit: 1001}, "limit must be between 1 and 1000"},
		{"garbage", service.ChangesRequest{Since: "not a cursor"}, "expired or foreign cursor"},
		{"edited", service.ChangesRequest{Since: edited}, "expired or foreign cursor"},
		{"cut", service.ChangesRequest{Since: cur[:len(cur)-4]}, "expired or foreign cursor"},
		{"another server's", service.ChangesRequest{Since: foreign.NextCursor}, "expired or foreign cursor"},
		{"huge", service.ChangesRequest{Since: strings.Repeat("A", 1<<20)}, "expired or foreign cursor"},
	} {
		_, err := env.Svc.Changes(ctx, a, c.req)
		if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid saying %q", c.name, err, c.want)
		}
	}
	_, admin := env.ServerAdmin(t, "root")
	if _, err := env.Svc.Changes(ctx, admin, service.ChangesRequest{}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("server-admin key: %v, want forbidden", err)
	}
	if _, err := env.Svc.Changes(ctx, memory.Caller{}, service.ChangesRequest{}); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("no key: %v, want unauthorized", err)
	}
}

// TestChangesNewKeyStartsAtCursorTime: a project the caller gets a key for
// after its cursor was made is read from the cursor's time, not from its
// history — in a workspace new to the cursor and in one it knows.
func TestChangesNewKeyStartsAtCursorTime(t *testing.T) {
	env := servicetest.New(t, service.Options{BudgetOff: true})
	tokA, a := env.Key(t, "acme", "one", "ann", memory.RoleWrite)
	tokB, b := env.Key(t, "beta", "two", "ann", memory.RoleWrite)
	tokC, c := env.Key(t, "acme", "three", "ann", memory.RoleWrite)
	feedWrite(t, env.Svc, b, "beta/two", "history")
	feedWrite(t, env.Svc, c, "acme/three", "history")
	feedWrite(t, env.Svc, a, "acme/one", "history")
	first, err := env.Svc.Changes(ctx, a, service.ChangesRequest{Since: "now"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the writes below are after the cursor's time
	feedWrite(t, env.Svc, b, "beta/two", "later")
	feedWrite(t, env.Svc, c, "acme/three", "later")
	feedWrite(t, env.Svc, a, "acme/one", "later")
	got, _ := pageAll(t, env.Svc, env.Caller(t, tokA, tokB, tokC), first.NextCursor, 2)
	want := []string{"acme/three remember later v1", "acme/one remember later v1", "beta/two remember later v1"}
	slices.Sort(want)
	gotLines := lines(got)
	slices.Sort(gotLines)
	if !slices.Equal(gotLines, want) {
		t.Errorf("with the new keys: %v, want the later writes alone %v", gotLines, want)
	}
}

// TestChangesVisibility: a propose key sees its own proposal and its
// rejection but not another agent's; a read key sees remember, forget and
// approve and no proposal; a reviewer sees them all; a project of the same
// workspace the caller holds no key for never appears (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func TestChangesVisibility(t *testing.T) {
	r := newReviewEnv(t, service.Options{BudgetOff: true})
	svc := r.env.Svc
	feedWrite(t, svc, r.walt, "", "base")
	mine := r.proposeNote(t, "mine", "pia's idea")
	_, pete := r.env.Key(t, "acme", "rev", "pete", memory.RolePropose)
	theirs, err := svc.Remember(ctx, pete, service.RememberRequest{Slug: "theirs", Content: "pete's idea"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reject(ctx, r.rita, mine.Proposal, service.RejectRequest{Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, r.rita, theirs.Proposal, service.ApproveRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Forget(ctx, r.walt, service.ForgetRequest{Slug: "base"}); err != nil {
		t.Fatal(err)
	}
	feedWrite(t, svc, r.otto, "acme/other", "hidden-slug")

	kinds := func(c memory.Caller) []string {
		got, _ := pageAll(t, svc, c, "", 3)
		out := []string{}
		for _, ch := range got {
			if ch.Project != "acme/rev" || strings.Contains(ch.Slug, "hidden") {
				t.Errorf("a change of a project without a key: %+v", ch)
			}
			out = append(out, ch.Kind+" "+ch.Slug)
		}
		return out
	}
	if got, want := kinds(r.pia), []string{"remember base", "propose mine", "reject mine", "approve theirs", "forget base"}; !slices.Equal(got, want) {
		t.Errorf("pia (propose) reads %v, want %v", got, want)
	}
	if got, want := kinds(r.reed), []string{"remember base", "approve theirs", "forget base"}; !slices.Equal(got, want) {
		t.Errorf("reed (read) reads %v, want %v", got, want)
	}
	want := []string{"remember base", "propose mine", "propose theirs", "reject mine", "approve theirs", "forget base"}
	if got := kinds(r.rita); !slices.Equal(got, want) {
		t.Errorf("rita (admin) reads %v, want %v", got, want)
	}
	got, _ := pageAll(t, svc, r.rita, "", 10)
	if got[3].Proposal != mine.Proposal || got[4].Proposal != theirs.Proposal || got[4].Agent != "rita" || got[4].Version != 1 {
		t.Errorf("review rows %+v, want the proposals named and the approval as rita's version 1", got[3:5])
	}
}

// TestChangeSignal: the signal fires after a write to a workspace of the
// caller's projects, not to another workspace, and stop releases it.
func TestChangeSignal(t *testing.T) {
	if os.Getenv(servicetest.RemoteEnv) == "1" {
		t.Skip("a node hears only its own commits; through the hop none is local")
	}
	env := servicetest.New(t, service.Options{BudgetOff: true})
	_, a := env.Key(t, "acme", "one", "ann", memory.RoleRead)
	_, w := env.Key(t, "acme", "one", "walt", memory.RoleWrite)
	_, o := env.Key(t, "other", "p", "otto", memory.RoleWrite)
	feedWrite(t, env.Svc, o, "", "warm") // opens the file before listening
	wake, stop := env.Svc.ChangeSignal(a)
	feedWrite(t, env.Svc, o, "", "elsewhere")
	select {
	case <-wake:
		t.Error("a signal for a write to another workspace")
	case <-time.After(50 * time.Millisecond):
	}
	feedWrite(t, env.Svc, w, "", "here")
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal after a write to the caller's workspace")
	}
	stop()
	feedWrite(t, env.Svc, w, "", "after")
	select {
	case <-wake:
		t.Error("a signal after stop")
	case <-time.After(50 * time.Millisecond):
	}
	_, admin := env.ServerAdmin(t, "root")
	never, stopAdmin := env.Svc.ChangeSignal(admin)
	defer stopAdmin()
	feedWrite(t, env.Svc, w, "", "for-nobody")
	select {
	case <-never:
		t.Error("a server-admin key's signal fired")
	case <-time.After(50 * time.Millisecond):
	}
}
