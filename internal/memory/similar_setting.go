package memory

// A project's similar setting: whether remember's answer carries the
// duplicate hint (similar) for a new slug. On is the default; a project
// whose agents write many short, alike entries on purpose (logs, series)
// switches it off and pays nothing for the lookup.
const (
	SimilarOn  = "on"
	SimilarOff = "off"
)

// ParseSimilarSetting checks a similar setting.
func ParseSimilarSetting(s string) (string, error) {
	switch s {
	case SimilarOn, SimilarOff:
		return s, nil
	}
	return "", Errorf(CodeInvalid, "similar %q must be on or off", s)
}
