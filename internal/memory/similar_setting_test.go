package memory

import "testing"

func TestParseSimilarSetting(t *testing.T) {
	for _, ok := range []string{SimilarOn, SimilarOff} {
		if got, err := ParseSimilarSetting(ok); err != nil || got != ok {
			t.Errorf("ParseSimilarSetting(%q) = %q, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", "On", "true", "agents", "off "} {
		_, err := ParseSimilarSetting(bad)
		if ErrorCode(err) != CodeInvalid {
			t.Errorf("ParseSimilarSetting(%q): code %q (%v), want invalid", bad, ErrorCode(err), err)
		}
		if err != nil && err.Error() != `invalid: similar "`+bad+`" must be on or off` {
			t.Errorf("ParseSimilarSetting(%q): message %q does not name the allowed values", bad, err.Error())
		}
	}
}
