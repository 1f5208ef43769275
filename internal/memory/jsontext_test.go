package memory

import "testing"

func TestHasLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		json string
		lone bool
	}{
		{`{"a":"plain"}`, false},
		{`{"a":"\ud83d\ude00"}`, false}, // a valid pair (😀)
		{`{"a":"\u00e4\n\"\\"}`, false},
		{`{"a":"\\ud800"}`, false}, // an escaped backslash, then text
		{`{"a":"\ud800"}`, true},
		{`{"a":"\udc00"}`, true},
		{`{"a":"\ud800\u0041"}`, true},
		{`{"a":"\ud800x"}`, true},
		{`{"a":"\uD83D\uDE00"}`, false},
		{`{"a":"\ud8`, false}, // truncated: the decoder's business
	} {
		if got := hasLoneSurrogate([]byte(tc.json)); got != tc.lone {
			t.Errorf("hasLoneSurrogate(%s) = %v, want %v", tc.json, got, tc.lone)
		}
	}
}
