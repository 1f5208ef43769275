package rank

import (
	"fmt"
	"sync"
	"testing"
)

// TestAutomataMemoisedWithinBytes: a word's automaton is built once and
// shared while it is among the recently used; the memo never holds more
// than its bytes, drops the least recently used first, and keeps no word
// too long for its whole budget.
func TestAutomataMemoisedWithinBytes(t *testing.T) {
	a := newAutomata(3 * 10 * automatonBytesPerByte) // three ten-letter words
	first, err := a.oneEdit("datenbankx")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := a.oneEdit("datenbankx"); again != first {
		t.Error("the same word's automaton was built again")
	}
	for _, w := range []string{"sicherungx", "schluesslx"} {
		if _, err := a.oneEdit(w); err != nil {
			t.Fatal(err)
		}
	}
	a.oneEdit("datenbankx") // used again: now the most recent
	if _, err := a.oneEdit("fehlerberi"); err != nil {
		t.Fatal(err)
	}
	if a.bytes > a.max {
		t.Errorf("the memo holds %d bytes, more than its %d", a.bytes, a.max)
	}
	if _, ok := a.byKey["sicherungx"]; ok {
		t.Error("the least recently used automaton was kept past the bound")
	}
	if _, ok := a.byKey["datenbankx"]; !ok {
		t.Error("a recently used automaton was dropped")
	}
	long := string(make([]byte, 31))
	if _, err := a.oneEdit(long); err == nil {
		if _, ok := a.byKey[long]; ok {
			t.Error("a word larger than the whole budget was kept")
		}
	}
	// What a memoised automaton matches is what a new one does.
	dfa, _ := a.oneEdit("datenbankx")
	for word, want := range map[string]bool{"datenbank": true, "datenbankxy": true, "datenbnakx": true, "dxtenbanky": false, "datenbankx": true} {
		if got, _ := dfa.MatchAndDistance(word); got != want {
			t.Errorf("datenbankx's automaton matches %q: %v, want %v", word, got, want)
		}
	}
}

// TestAutomataConcurrentRecalls: many goroutines asking for overlapping
// words (under -race) get working automata and leave the memo within its
// bytes and consistent.
func TestAutomataConcurrentRecalls(t *testing.T) {
	a := newAutomata(5 * 8 * automatonBytesPerByte)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w := fmt.Sprintf("wort%04d", (g*7+i)%12)
				dfa, err := a.oneEdit(w)
				if err != nil {
					t.Error(err)
					return
				}
				if ok, _ := dfa.MatchAndDistance(w); !ok {
					t.Errorf("the automaton of %q does not match it", w)
				}
			}
		}()
	}
	wg.Wait()
	if a.bytes > a.max || a.order.Len() != len(a.byKey) {
		t.Errorf("memo of %d bytes (max %d), %d in order, %d by key", a.bytes, a.max, a.order.Len(), len(a.byKey))
	}
}
