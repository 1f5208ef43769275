package service

// DerivedTitle is the title Remember gives content written without one: its
// first non-empty line without Markdown heading marks, at most 80
// characters. The web UI's edit form uses it to tell a derived title (which
// it leaves empty, so a new first line derives a new title) from one a
// person set.
func DerivedTitle(content string) string { return titleFromContent(content) }
