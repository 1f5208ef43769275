package service_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// keyEnv is a roleEnv on a clock tests can move forward.
type keyEnv struct {
	*roleEnv
	offset atomic.Int64 // added to the wall clock, in nanoseconds
}

func newKeyEnv(t *testing.T) *keyEnv {
	t.Helper()
	e := &keyEnv{}
	e.roleEnv = newRoleEnv(t, service.Options{Now: func() time.Time {
		return time.Now().Add(time.Duration(e.offset.Load()))
	}})
	return e
}

// The id of a project admin's next key does not follow from how many keys other
// projects created meanwhile (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects): with one
// server-wide sequence it would be the previous id plus one plus their count,
// every time.
func TestKeyIDsSayNothingOfOtherProjects(t *testing.T) {
	e := newKeyEnv(t)
	var prev int64
	predicted := 0
	for i := 0; i < 20; i++ {
		between := i % 3
		for j := 0; j < between; j++ {
			if _, _, err := e.env.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: "other", Project: "gamma"}, "bot", memory.RoleRead); err != nil {
				t.Fatal(err)
			}
		}
		_, k, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, e.alphaAdmin.First().Project, "bot", memory.RoleRead)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && k.ID == prev+1+int64(between) {
			predicted++
		}
		prev = k.ID
	}
	if predicted == 19 {
		t.Fatal("every new key id of acme/alpha was its previous id plus the keys other/gamma created in between")
	}
}

// A project's key creations through the web UI (its admin and a server
// admin alike) are limited per hour, revoked keys included; the command line
// is not, other projects are not affected, and the window slides.
func TestKeyCreationsPerHour(t *testing.T) {
	e := newKeyEnv(t)
	ref := e.alphaAdmin.First().Project
	// Its first key came from the command line and counts: create and
	// revoke the rest up to the limit, as a loop of an agent would.
	for i := 1; i < memory.KeyCreationsPerHour; i++ {
		_, k, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "churn", memory.RoleRead)
		if err != nil {
			t.Fatalf("creation %d of %d: %v", i+1, memory.KeyCreationsPerHour, err)
		}
		if err := e.env.Svc.RevokeProjectKey(ctx, e.alphaAdmin, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	before, err := e.env.Store.ListProjectKeys(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, by := range []memory.Caller{e.alphaAdmin, e.server} {
		_, _, err := e.env.Svc.CreateProjectKey(ctx, by, ref, "one-more", memory.RoleRead)
		var me *memory.Error
		if !errors.As(err, &me) || me.Code != memory.CodeBudgetExhausted ||
			!strings.HasPrefix(me.Error(), "budget_exhausted: project acme/alpha created its 100 keys in the last hour (revoked ones count); retry in ") ||
			me.RetryAfter <= 0 || me.RetryAfter > time.Hour {
			t.Fatalf("%s key over the limit: %v; want budget_exhausted with a retry within the hour", by.First().Role, err)
		}
	}
	if _, _, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "bad\nname", memory.RoleRead); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("a bad agent name over the limit: %v; want invalid, the input's problem first", err)
	}
	if after, _ := e.env.Store.ListProjectKeys(ctx, ref); len(after) != len(before) {
		t.Fatalf("%d keys after the refused creations, were %d", len(after), len(before))
	}
	// Another project is not affected; the command line is not limited.
	if _, _, err := e.env.Svc.CreateProjectKey(ctx, e.gammaAdmin, e.gammaAdmin.First().Project, "bot", memory.RoleRead); err != nil {
		t.Fatalf("gamma's admin creating a key: %v", err)
	}
	if _, _, err := e.env.Svc.CreateKey(ctx, ref, "operator-made", memory.RoleRead); err != nil {
		t.Fatalf("the command line creating a key: %v", err)
	}

	// Half an hour on the limit still holds, and says when it ends; an hour
	// after the last creation it no longer counts them.
	e.offset.Store(int64(30 * time.Minute))
	_, _, err = e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "one-more", memory.RoleRead)
	var me *memory.Error
	if !errors.As(err, &me) || me.Code != memory.CodeBudgetExhausted || me.RetryAfter > 30*time.Minute+time.Second {
		t.Fatalf("half an hour later: %v (retry after %v); want budget_exhausted within 30 min", err, me.RetryAfter)
	}
	e.offset.Store(int64(61 * time.Minute))
	if _, _, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "next-hour", memory.RoleRead); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
}

// A project holds at most so many live keys; revoking one makes room.
func TestLiveKeysPerProject(t *testing.T) {
	e := newKeyEnv(t)
	service.SetKeyLimits(e.env.Svc, 0, 3)
	ref := e.alphaAdmin.First().Project
	var last memory.Key
	for i := 1; i < 3; i++ { // alice's key is the first
		var err error
		if _, last, err = e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "bot", memory.RoleRead); err != nil {
			t.Fatal(err)
		}
	}
	for _, by := range []memory.Caller{e.alphaAdmin, e.server} {
		_, _, err := e.env.Svc.CreateProjectKey(ctx, by, ref, "bot", memory.RoleRead)
		if memory.ErrorCode(err) != memory.CodeTooLarge ||
			err.Error() != "too_large: project acme/alpha has 3 live keys, the most a project may hold; revoke keys it no longer uses first" {
			t.Fatalf("a fourth live key: %v; want too_large", err)
		}
	}
	if err := e.env.Svc.RevokeProjectKey(ctx, e.alphaAdmin, last.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, ref, "bot", memory.RoleRead); err != nil {
		t.Fatalf("after revoking one: %v", err)
	}
	if _, _, err := e.env.Svc.CreateProjectKey(ctx, e.gammaAdmin, e.gammaAdmin.First().Project, "bot", memory.RoleRead); err != nil {
		t.Fatalf("gamma's admin creating a key: %v", err)
	}
}

// Concurrent creations cannot all pass the count: exactly the limit succeed.
func TestKeyCreationsPerHourConcurrent(t *testing.T) {
	e := newKeyEnv(t)
	service.SetKeyLimits(e.env.Svc, 10, 0)
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.env.Svc.CreateProjectKey(ctx, e.alphaAdmin, e.alphaAdmin.First().Project, "bot", memory.RoleRead)
			switch memory.ErrorCode(err) {
			case "":
				ok.Add(1)
			case memory.CodeBudgetExhausted:
				refused.Add(1)
			default:
				t.Errorf("create: %v", err)
			}
		}()
	}
	wg.Wait()
	// alice's key is one of the ten.
	if ok.Load() != 9 || refused.Load() != 23 {
		t.Fatalf("%d created, %d refused; want 9 and 23", ok.Load(), refused.Load())
	}
}
