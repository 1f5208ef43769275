package memory

// Vector is the embedding of one version of an entry, computed by one model.
// Vectors are derived data: they live beside the versions in the workspace
// file, so a restart needs no recomputation, and are left out of exports.
type Vector struct {
	Project ProjectRef
	Slug    string
	Version int
	Model   string
	Values  []float32
}

// VectorTask is a version that has no vector yet for the model in use: the
// embedding worker sends Text (title, tags and content, cut to a bound) to
// the endpoint and stores the answer as a Vector of Version.
type VectorTask struct {
	Project ProjectRef
	Slug    string
	Version int
	Text    string
}

// EmbedText is the text of an entry that gets embedded: title, tags and
// content on their own lines, cut to MaxEmbedText runes.
func EmbedText(title string, tags []string, content string) string {
	var b []rune
	b = append(b, []rune(title)...)
	if len(tags) > 0 {
		b = append(b, '\n')
		for i, t := range tags {
			if i > 0 {
				b = append(b, ',', ' ')
			}
			b = append(b, []rune(t)...)
			if len(b) >= MaxEmbedText {
				break
			}
		}
	}
	if len(b) < MaxEmbedText {
		b = append(b, '\n')
		for _, r := range content {
			if len(b) >= MaxEmbedText {
				break
			}
			b = append(b, r)
		}
	}
	return string(b[:min(len(b), MaxEmbedText)])
}
