package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"munin/internal/cluster/etcdtest"
)

// TestAcquireFollowsPlacement: three nodes all try to acquire twelve workspaces at once; each workspace
// gets exactly one owner, its best-ranked node (which tries at once while the others wait a 1 s step).
// When the node holding the most dies, the survivors acquire its workspaces, each going to its
// next-ranked node — so they spread over both survivors.
func TestAcquireFollowsPlacement(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var ns []*Node
	var advs []string
	for i := 1; i <= 3; i++ {
		adv := fmt.Sprintf("http://127.0.0.1:900%d", i)
		ns = append(ns, joinT(t, testConfig(t, c.Endpoints(), adv, 2*time.Second)))
		advs = append(advs, adv)
	}
	for _, n := range ns {
		waitFor(t, n, "all live", func() bool { return slices.Equal(n.Live(), advs) })
	}
	wss := workspaces(12)
	owners := acquireAll(t, ns, wss)
	held := map[string][]string{}
	for _, ws := range wss {
		if want := Rank(ws, advs)[0]; owners[ws] != want {
			t.Errorf("%s acquired by %s, want its best-ranked node %s", ws, owners[ws], want)
		}
		held[owners[ws]] = append(held[owners[ws]], ws)
	}
	dead := slices.IndexFunc(ns, func(n *Node) bool { return len(held[n.Advertise()]) >= 4 })
	if dead < 0 {
		t.Fatalf("no node holds 4 of 12 workspaces: %v", held)
	}
	deadAdv := ns[dead].Advertise()
	_ = ns[dead].Close()
	survivors := slices.Delete(slices.Clone(ns), dead, dead+1)
	survivorAdvs := []string{survivors[0].Advertise(), survivors[1].Advertise()}
	for _, n := range survivors {
		waitFor(t, n, "dead node gone", func() bool {
			_, _, ok := n.Owner(held[deadAdv][0])
			return !ok && slices.Equal(n.Live(), survivorAdvs)
		})
	}
	heirs := acquireAll(t, survivors, held[deadAdv])
	gained := map[string]int{}
	for ws, heir := range heirs {
		if want := Rank(ws, survivorAdvs)[0]; heir != want {
			t.Errorf("%s went to %s, want %s", ws, heir, want)
		}
		gained[heir]++
	}
	if len(gained) != 2 {
		t.Errorf("the dead node's %d workspaces went to %v, want both survivors", len(held[deadAdv]), gained)
	}
}

// acquireAll lets every node acquire every workspace concurrently and returns each workspace's owner,
// failing the test unless exactly one node won each and all others were told it is owned.
func acquireAll(t *testing.T, ns []*Node, wss []string) map[string]string {
	t.Helper()
	var mu sync.Mutex
	owners := map[string]string{}
	var wg sync.WaitGroup
	for _, n := range ns {
		for _, ws := range wss {
			wg.Go(func() {
				o, err := n.Acquire(ctxT(t), ws, time.Second)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && owners[ws] != "":
					t.Errorf("%s acquired by %s and %s", ws, owners[ws], n.Advertise())
				case err == nil:
					owners[ws] = n.Advertise()
					if o.Workspace() != ws || !o.Valid() {
						t.Errorf("%s: ownership %v", ws, o)
					}
				case !errors.Is(err, ErrOwned):
					t.Errorf("%s on %s: %v", ws, n.Advertise(), err)
				}
			})
		}
	}
	wg.Wait()
	for _, ws := range wss {
		if owners[ws] == "" {
			t.Fatalf("%s not acquired by anyone", ws)
		}
	}
	return owners
}
