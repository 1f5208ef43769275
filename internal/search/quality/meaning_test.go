package quality

import (
	"testing"

	"munin/internal/embed"
	"munin/internal/search"
	"munin/internal/store"
)

// The benchmark's meaning path is the server's: queries are embedded by the
// stand-in (conceptEmbedder, in process), the notes' vectors are made by the
// embedding worker through an embedding client calling the stand-in's
// OpenAI-compatible endpoint (newEmbedServer) and stored in the workspace
// file, and recall reads them from the store. Only the model is a stand-in.
func init() {
	meaning = &meaningHook{options: meaningOptions, ready: fillVectors}
}

// meaningFloors per kind for recall with the meaning path on, set just
// below what it measured on 2026-12-01 with the stand-in embedder and the
// search defaults (RRF k 60, fuse depth 20, no least similarity): forms
// 0.86/0.95/0.91, compound-split 0.95/1.00/0.97, compound-join
// 0.50/0.90/0.66, typo 0.91/1.00/0.94, acronym 0.94/1.00/0.97, paraphrase
// 0.21/0.58/0.36 (hit@1/hit@5/MRR); the compound kinds' on 2026-12-04
// (compound-split 1.00/1.00/1.00, compound-join 0.56/0.89/0.69, the
// stand-in meeting a compound by its head). The stand-in is a hand-made concept
// table, not a model: these floors guard the plumbing and the fusion on
// this corpus, not the quality of any real model. Raise them when recall
// gets better; never lower one to let a change pass.
var meaningFloors = map[string]floor{
	kindForms:      {hit1: 0.85, hit5: 0.95, mrr: 0.89},
	kindSplit:      {hit1: 0.95, hit5: 0.99, mrr: 0.96},
	kindJoin:       {hit1: 0.52, hit5: 0.86, mrr: 0.65},
	kindTypo:       {hit1: 0.90, hit5: 0.98, mrr: 0.92},
	kindAcronym:    {hit1: 0.93, hit5: 0.98, mrr: 0.95},
	kindParaphrase: {hit1: 0.20, hit5: 0.55, mrr: 0.34},
}

// meaningOptions switch recall's meaning path on as the server does
// (internal/app): queries embedded by emb, vectors read from the store.
func meaningOptions(_ testing.TB, emb queryEmbedder, st *store.Store) search.Options {
	return search.Options{Meaning: search.MeaningOptions{Embedder: emb, Vectors: st}}
}

// fillVectors embeds every note of s through the embedding pipeline — an
// embed.Client calling the stand-in endpoint over HTTP, an embed.Worker
// storing the vectors in the workspace file and telling the registry — as
// `munin reindex --embeddings` does, then checks that the backlog is 0.
func fillVectors(t testing.TB, s *stack, emb queryEmbedder) {
	t.Helper()
	srv := newEmbedServer(t)
	c, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	w := embed.NewWorker(s.st, c, embed.Options{OnStored: s.reg.OnStored})
	t.Cleanup(w.Close)
	ctx := testCtx(t)
	n, err := w.Fill(ctx, s.ref.Workspace, nil)
	if err != nil {
		t.Fatalf("fill vectors: %v (%d stored)", err, n)
	}
	missing, err := s.st.CountMissingVectors(ctx, s.ref.Workspace, emb.Model())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || missing != 0 {
		t.Fatalf("fill stored %d vectors, %d still missing; want all stored and none missing", n, missing)
	}
}
