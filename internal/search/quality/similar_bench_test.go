//go:build unix

package quality

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/search/searchbench"
	"munin/internal/service"
	"munin/internal/store"
	"munin/internal/store/storetest"
)

// BenchmarkRememberSimilar10k is what the duplicate warning costs a
// remember: a project of 10,000 entries of about 60 words (the words of
// testdata/notes, as often as they use them), through the service on the
// real store. "with" looks for similar entries as the server does;
// "without" is the same service over the same store and registry, with an
// index whose lookup answers nothing at once. "new" remembers a new slug
// of such a text (the lookup runs), "update" a new version of one of the
// 10,000 (the lookup only finds the slug has a version). Each round of the
// benchmark remembers remRound texts in each of the four ways, in turn; it
// reports the medians over the rounds:
//
//	go test -run '^$' -bench RememberSimilar10k -benchtime 7x ./internal/search/quality/
//
// cpu-µs per remember is the CPU of the whole process (the write, its index
// refresh, the lookup), what bounds throughput on a busy server; µs per
// remember is the time the caller waits. The words of these entries are
// few (about 1,500) and each is in hundreds of entries, so that every word
// of a new text matches many: the lookup's worst case, a real memory's
// rarer words make its search cheaper.
func BenchmarkRememberSimilar10k(b *testing.B) {
	rig := buildRememberRig(b)
	type way struct {
		name   string
		svc    *service.Service
		update bool
	}
	ways := []way{{"with-new", rig.with, false}, {"without-new", rig.without, false}, {"with-update", rig.with, true}, {"without-update", rig.without, true}}
	cpu, wall := make([][]float64, len(ways)), make([][]float64, len(ways))
	for b.Loop() {
		for i, w := range ways {
			c, t := rig.round(b, w.svc, w.update)
			cpu[i], wall[i] = append(cpu[i], c), append(wall[i], t)
		}
	}
	for i, w := range ways {
		b.ReportMetric(median(cpu[i]), w.name+"-cpu-µs/remember")
		b.ReportMetric(median(wall[i]), w.name+"-µs/remember")
	}
	b.ReportMetric(float64(rig.hints)/float64(rig.withOps), "hints/remember")
}

// remRound is how many remembers one round makes with and without.
const remRound = 200

// remRig is the store and registry and the two services over them.
type remRig struct {
	with, without  *service.Service
	caller         memory.Caller
	texts          []string
	next           int
	hints, withOps int
}

func buildRememberRig(b *testing.B) *remRig {
	ctx := context.Background()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ref := memory.ProjectRef{Workspace: "acme", Project: "team"}
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		b.Fatal(err)
	}
	var words []string
	for _, n := range loadNotes(b) {
		words = append(words, strings.Fields(n.title+" "+n.content)...)
	}
	vs := storetest.Notes(10_000, words, rand.New(rand.NewPCG(3, 4)))
	for i := 0; i < len(vs); i += 1000 {
		if _, err := st.ImportVersions(ctx, ref, vs[i:i+1000], memory.DefaultMaxContent); err != nil {
			b.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := search.NewRegistry(st, search.Options{Logger: log, IndexWait: 5 * time.Minute}) // the build of 10,000 entries
	opts := service.Options{Logger: log, SearchLogOff: true, RecallRate: -1, DefaultWriteBudget: 1 << 30, DefaultWriteBudgetBytes: 1 << 40}
	rig := &remRig{
		with:    service.New(st, reg, opts),
		without: service.New(st, noSimilar{reg}, opts),
	}
	b.Cleanup(func() {
		rig.with.Close()
		rig.without.Close()
		reg.Close()
		st.Close()
	})
	token, _, err := rig.with.CreateKey(ctx, ref, "bench", memory.RoleWrite)
	if err != nil {
		b.Fatal(err)
	}
	if rig.caller, err = rig.with.Authenticate(ctx, token); err != nil {
		b.Fatal(err)
	}
	for _, v := range storetest.Notes(20_000, words, rand.New(rand.NewPCG(5, 6))) {
		rig.texts = append(rig.texts, v.Title+"\n"+v.Content)
	}
	// Open the index before the first timed write.
	if _, err := reg.SearchProjects(ctx, []memory.ProjectRef{ref}, memory.SearchQuery{Text: "x"}); err != nil {
		b.Fatal(err)
	}
	return rig
}

// noSimilar is the registry without the duplicate lookup.
type noSimilar struct{ *search.Registry }

func (noSimilar) Similar(context.Context, memory.ProjectRef, string, string) ([]memory.Similar, error) {
	return nil, nil
}

// round remembers remRound texts through svc, each a new slug or an update
// of one of the 10,000 entries, and returns the CPU and
// the time per remember in µs.
func (rig *remRig) round(b *testing.B, svc *service.Service, update bool) (cpu, wall float64) {
	ctx := context.Background()
	c0, t0 := searchbench.CPUTime(b), time.Now()
	for range remRound {
		i := rig.next
		rig.next++
		slug := fmt.Sprintf("bench/new-%06d", i)
		if update {
			slug = fmt.Sprintf("notes/entry-%05d", i%10_000) // storetest.Notes's slugs
		}
		res, err := svc.Remember(ctx, rig.caller, service.RememberRequest{Slug: slug, Content: rig.texts[i%len(rig.texts)]})
		if err != nil {
			b.Fatal(err)
		}
		if svc == rig.with {
			rig.hints += len(res.Similar)
			rig.withOps++
		}
	}
	return float64((searchbench.CPUTime(b) - c0).Microseconds()) / remRound, float64(time.Since(t0).Microseconds()) / remRound
}

// median of xs (not empty).
func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
