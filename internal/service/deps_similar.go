package service

// Similarity is the part of Index that finds entries whose text closely
// matches a new one (stage 11).
type Similarity interface{}
