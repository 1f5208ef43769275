//go:build last

// The cold start's data: N entries of about 60 words as an export file
// (JSON Lines, as munin import reads it) and the 1,000 changes written while
// the server is down.

package lasttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"munin/internal/portable"
)

// kaltVocab is the number of distinct words of the generated prose; the
// words are drawn Zipf-distributed, so a few are in most entries and most
// in a handful, as in real notes (100,000 entries of 60 words hold some
// 50,000 distinct words).
const kaltVocab = 50000

// kaltWords is the prose of an entry besides its unique word.
const kaltWords = 59

// Changes while the server is down: new entries, entries replaced by a
// second version and entries forgotten (a tombstone), 1,000 versions in all.
const (
	kaltNew      = 400
	kaltReplaced = 500
	kaltForgot   = 100
)

// syllables build the vocabulary: no syllable is a function word, and two
// or three of them make a word.
var syllables = []string{"ba", "ke", "lin", "mor", "sta", "ter", "ver", "schi", "dra", "pel",
	"gor", "wen", "tak", "rum", "fle", "sin", "bro", "kal", "mek", "nol",
	"pra", "quo", "rix", "sel", "tru", "val", "wim", "zen", "hul", "jor",
	"gri", "fan", "dol", "cus", "bel", "arn", "ost", "ilm", "erk", "uba"}

// vocabWord is the word of rank r (0: the most frequent): frequent words
// are short, as in real text.
func vocabWord(r int) string {
	n := len(syllables)
	var b strings.Builder
	v := r + n // at least two syllables
	for v > 0 {
		b.WriteString(syllables[v%n])
		v /= n
	}
	return b.String()
}

// kaltWord is the unique word of version v of entry i. It holds digits, so
// recall's typo tier never takes it for a misspelt neighbour: it finds its
// entry and no other.
func kaltWord(i, v int) string { return fmt.Sprintf("kw%dv%d", i, v) }

func kaltSlug(i int) string { return fmt.Sprintf("notizen/n%06d", i) }

// kaltText is entry i's version v: a title of three words and about 60
// words of prose in sentences, the unique word among them.
func kaltText(rng *rand.Rand, z *rand.Zipf, i, v int) (title, content string) {
	w := func() string { return vocabWord(int(z.Uint64())) }
	title = fmt.Sprintf("Notiz %d: %s %s %s", i, w(), w(), w())
	var b strings.Builder
	at := rng.IntN(kaltWords)
	for k := range kaltWords + 1 {
		word := w()
		if k == at {
			word = kaltWord(i, v)
		}
		switch {
		case k == 0:
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		case k%10 == 0:
			b.WriteString(". " + strings.ToUpper(word[:1]) + word[1:])
		default:
			b.WriteString(" " + word)
		}
	}
	b.WriteString(".")
	return title, b.String()
}

// kaltFile writes lines to a new file in dir and returns its path and size.
func kaltFile(t testing.TB, dir, name string, lines func(emit func(portable.Line))) (string, int64) {
	path := dir + "/" + name
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	lines(func(l portable.Line) {
		if err == nil {
			err = enc.Encode(l)
		}
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("%s schreiben: %v", name, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, st.Size()
}

// kaltChanges says which entries the changes touch: the replaced and the
// forgotten ones, spread over all n entries, disjoint; new entries are
// n, n+1, ….
func kaltChanges(n int) (replaced, forgot []int) {
	step := n / (kaltReplaced + kaltForgot)
	for k := range kaltReplaced + kaltForgot {
		if k%6 == 5 && len(forgot) < kaltForgot {
			forgot = append(forgot, k*step)
		} else {
			replaced = append(replaced, k*step)
		}
	}
	return replaced, forgot
}

// kaltData writes the import file of n entries and the file of changes.
func kaltData(t testing.TB, dir string, n int) (first, changes string, firstSize int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, 1.07, 2, kaltVocab-1)
	tags := terms
	// Times before now, one second apart, so that every version is older
	// than the test and a replacement newer than what it replaces.
	base := time.Now().UTC().Add(-time.Duration(n+2*(kaltNew+kaltReplaced+kaltForgot)) * time.Second)
	at := func(k int) string { return base.Add(time.Duration(k) * time.Second).Format(time.RFC3339Nano) }
	line := func(i, v, k int) portable.Line {
		title, content := kaltText(rng, z, i, v)
		return portable.Line{Slug: kaltSlug(i), Version: v, Title: title, Content: content,
			Tags: []string{tags[i%len(tags)]}, Agent: "kaltstart", CreatedAt: at(k)}
	}
	first, firstSize = kaltFile(t, dir, "eintraege.jsonl", func(emit func(portable.Line)) {
		for i := range n {
			emit(line(i, 1, i))
		}
	})
	replaced, forgot := kaltChanges(n)
	changes, _ = kaltFile(t, dir, "aenderungen.jsonl", func(emit func(portable.Line)) {
		k := n
		for j := range kaltNew {
			emit(line(n+j, 1, k))
			k++
		}
		for _, i := range replaced {
			emit(line(i, 2, k))
			k++
		}
		for _, i := range forgot {
			emit(portable.Line{Slug: kaltSlug(i), Version: 2, Tags: []string{}, Agent: "kaltstart", CreatedAt: at(k), Deleted: true})
			k++
		}
	})
	return first, changes, firstSize
}
