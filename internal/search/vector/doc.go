// Package vector is the meaning half of a recall: per project, the vectors
// of its entries' latest versions (loaded from the store on first use,
// kept in step by the embedding worker, dropped when idle), the query's own
// vector (embedded once, cached) and the exact top-k by cosine similarity.
// It knows nothing of words or of the keyword index; package search fuses
// its hits with the keyword hits.
package vector
