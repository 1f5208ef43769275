package index

import (
	"fmt"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// pacedIndex is a new index with the server's settings, paced.
func pacedIndex(t *testing.T) (bleve.Index, *scorch.Scorch) {
	t.Helper()
	m, err := NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := bleve.NewUsing(t.TempDir(), m, scorch.Name, scorch.Name, scorchConfig(DefaultPersistNap))
	if err != nil {
		t.Fatal(err)
	}
	return idx, scorchOf(t, idx)
}

// TestShortNapIsNotPaced: the server's nap is paced; a nap shorter than
// the pace (tests that want their index on disk soon) is not.
func TestShortNapIsNotPaced(t *testing.T) {
	for _, c := range []struct {
		nap   time.Duration
		paced bool
	}{{DefaultPersistNap, true}, {persistPace, true}, {persistPace - time.Millisecond, false}, {time.Millisecond, false}} {
		_, paced := scorchConfig(c.nap)["eventCallbackName"]
		if paced != c.paced {
			t.Errorf("nap %v: paced %v, want %v", c.nap, paced, c.paced)
		}
	}
}

func oneDocBatch(t *testing.T, idx bleve.Index, n int) {
	t.Helper()
	b := idx.NewBatch()
	if err := b.Index(fmt.Sprintf("d%d", n%50), map[string]any{"content": fmt.Sprintf("common w%d", n)}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Batch(b); err != nil {
		t.Fatal(err)
	}
}

// TestPersistPace: under a batch every 3 ms the persister writes at most
// once per persistPace (without the pace about 30 times a second), and
// searches still see every batch at once.
func TestPersistPace(t *testing.T) {
	idx, s := pacedIndex(t)
	defer idx.Close()
	const run = 3 * time.Second
	start := time.Now()
	n := 0
	for ; time.Since(start) < run; n++ {
		oneDocBatch(t, idx, n)
		q := bleve.NewMatchQuery(fmt.Sprintf("w%d", n))
		q.SetField("content")
		res, err := idx.Search(bleve.NewSearchRequest(q))
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 1 {
			t.Fatalf("batch %d: its word found %d times right after it, want 1", n, res.Total)
		}
		time.Sleep(3 * time.Millisecond)
	}
	elapsed := time.Since(start)
	loops := s.StatsMap()["TotPersistLoopBeg"].(uint64)
	if most := uint64(elapsed/persistPace) + 3; loops > most {
		t.Errorf("%d batches in %s: the persister looped %d times, want at most %d", n, elapsed.Round(time.Millisecond), loops, most)
	}
}

// TestCloseWakesRestingPersister: an index closed while its persister
// rests closes, and leaves no resting entry behind.
func TestCloseWakesRestingPersister(t *testing.T) {
	idx, s := pacedIndex(t)
	oneDocBatch(t, idx, 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := resting.Load(s); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the persister never rested after a batch")
		}
		time.Sleep(time.Millisecond)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := resting.Load(s); ok {
		t.Error("a closed index's persister is still resting")
	}
}
