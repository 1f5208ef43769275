package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"munin/internal/memory"
)

// Notes makes n first versions "notes/entry-00000"… for the read and
// recall benchmarks: a title of 4 and a content of 60 words drawn from
// words, two of eight tags, drawn by rng (a fixed seed keeps runs alike).
func Notes(n int, words []string, rng *rand.Rand) []memory.Version {
	pick := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ")
	}
	tags := []string{"db", "infra", "adr", "ops", "team:core", "bug", "idee", "api"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vs := make([]memory.Version, n)
	for i := range vs {
		vs[i] = memory.Version{Slug: fmt.Sprintf("notes/entry-%05d", i), Version: 1, Title: pick(4), Content: pick(60),
			Tags: []string{tags[rng.IntN(len(tags))], tags[rng.IntN(len(tags))]}, Agent: "bench", CreatedAt: at}
	}
	return vs
}
