// Package quality measures how well recall finds what agents mean: a corpus
// of German and English team notes (testdata/notes) and queries with the
// entries each must find (testdata/queries.tsv), grouped by kind — word
// forms, compounds split and joined, typos, acronyms, paraphrases. The
// package holds tests only; the benchmark runs with
//
//	go test -run TestRecallQuality -v ./internal/search/...
//
// and prints hit@1, hit@5 and MRR per kind, by words alone and with the
// meaning path on. The meaning path embeds with a stand-in
// (conceptEmbedder): a hand-made concept table for this corpus, not a
// model. TestRecallFusion compares settings of the fusion.
package quality
