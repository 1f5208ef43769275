package servicetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// NewMeaning is New with the recall's meaning path on: queries and entries
// are embedded by emb, and every project's vectors are those of its latest
// live versions, embedded when the project's vectors are first loaded (what
// a caught-up embedding worker would have stored).
func NewMeaning(t testing.TB, opts service.Options, emb search.QueryEmbedder) *Env {
	t.Helper()
	return build(t, opts, search.Options{Meaning: search.MeaningOptions{Embedder: emb}})
}

// ConceptEmbedder is a deterministic stand-in for an embedding model: each
// dimension is one list of words (a concept), and a text's vector counts
// the words of each list it holds. Texts about one concept in other words
// get close vectors, as a real model gives them.
type ConceptEmbedder [][]string

// Model names the fake model.
func (e ConceptEmbedder) Model() string { return "servicetest-concepts" }

// Embed returns one vector per text.
func (e ConceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, len(e))
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
			for d, words := range e {
				if slices.Contains(words, w) {
					v[d]++
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

// scanVectors embeds a project's latest live versions on request.
type scanVectors struct {
	st  *store.Store
	emb search.QueryEmbedder
}

func (s scanVectors) Vectors(ctx context.Context, ref memory.ProjectRef, model string) ([]memory.Vector, error) {
	var vs []memory.Version
	if err := s.st.ScanLatest(ctx, ref, func(v memory.Version) error {
		vs = append(vs, v)
		return nil
	}); err != nil {
		return nil, err
	}
	texts := make([]string, len(vs))
	for i, v := range vs {
		texts[i] = v.Title + "\n" + strings.Join(v.Tags, " ") + "\n" + v.Content
	}
	values, err := s.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Vector, len(vs))
	for i, v := range vs {
		out[i] = memory.Vector{Project: ref, Slug: v.Slug, Version: v.Version, Model: model, Values: values[i]}
	}
	return out, nil
}
