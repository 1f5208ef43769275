package memory

// Vector is the embedding of one version of an entry by one model: derived
// data, stored beside the version it belongs to.
type Vector struct {
	Project ProjectRef
	Slug    string
	Version int
	Model   string
	Values  []float32
}

// VectorTask is a version that still needs its vector: the text to embed is
// its title, tags and content.
type VectorTask struct {
	Project ProjectRef
	Slug    string
	Version int
	Text    string
}
