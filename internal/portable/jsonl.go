package portable

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"munin/internal/memory"
)

// Line is one version in an export file. The field order is the order of
// the JSON keys, so the same history always gives the same bytes. Tools that
// write import files (the cold-start measurement) use it too.
type Line struct {
	Slug      string   `json:"slug"`
	Version   int      `json:"version"`
	Title     string   `json:"title"`
	Content   string   `json:"content"`
	Tags      []string `json:"tags"`
	Agent     string   `json:"agent"`
	CreatedAt string   `json:"created_at"`
	Deleted   bool     `json:"deleted"`
}

// maxLine bounds one line of an export file: the largest content JSON-escaped
// (up to 6 bytes per byte) with room for the other fields.
const maxLine = 64 << 20

// encoder writes versions as JSON Lines.
type encoder struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newEncoder(w io.Writer) *encoder {
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	// Markdown is full of <, > and &; escaping them would only hurt reading.
	enc.SetEscapeHTML(false)
	return &encoder{w: bw, enc: enc}
}

// write encodes one version as one line.
func (e *encoder) write(v memory.Version) error {
	tags := v.Tags
	if tags == nil {
		tags = []string{}
	}
	return e.enc.Encode(Line{
		Slug: v.Slug, Version: v.Version, Title: v.Title, Content: v.Content, Tags: tags,
		Agent: v.Agent, CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339Nano), Deleted: v.Deleted,
	})
}

func (e *encoder) flush() error { return e.w.Flush() }

// decoder reads versions from JSON Lines, counting lines from 1.
type decoder struct {
	sc *bufio.Scanner
	n  int
}

func newDecoder(r io.Reader) *decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &decoder{sc: sc}
}

// next returns the next version and its line number; io.EOF at the end.
// Blank lines are skipped. A line that is not exactly one JSON object with
// known fields and valid UTF-8 is an invalid error naming the line.
func (d *decoder) next() (memory.Version, int, error) {
	for d.sc.Scan() {
		d.n++
		b := bytes.TrimSpace(d.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		v, err := parseLine(b)
		if err != nil {
			return v, d.n, lineError(d.n, err)
		}
		return v, d.n, nil
	}
	if err := d.sc.Err(); err != nil {
		return memory.Version{}, d.n + 1, lineError(d.n+1, fmt.Errorf("read: %w", err))
	}
	return memory.Version{}, d.n, io.EOF
}

// parseLine decodes one line strictly.
func parseLine(b []byte) (memory.Version, error) {
	// encoding/json would quietly turn invalid UTF-8 and lone surrogate
	// escapes into U+FFFD; an import must not change a byte of what it
	// stores, so it refuses instead.
	if err := memory.CheckJSONText(b); err != nil {
		return memory.Version{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Line
	if err := dec.Decode(&l); err != nil {
		return memory.Version{}, memory.Errorf(memory.CodeInvalid, "not a version object: %v", err)
	}
	if dec.More() {
		return memory.Version{}, memory.Errorf(memory.CodeInvalid, "more than one JSON value on the line")
	}
	v := memory.Version{Slug: l.Slug, Version: l.Version, Title: l.Title, Content: l.Content,
		Tags: l.Tags, Agent: l.Agent, Deleted: l.Deleted}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	// The slug first: it is what a reader of the error needs to find the line.
	if err := memory.ValidateSlug(v.Slug); err != nil {
		return v, err
	}
	if l.CreatedAt == "" {
		return v, memory.Errorf(memory.CodeInvalid, "%s v%d: created_at is missing", v.Slug, v.Version)
	}
	at, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
	if err != nil {
		return v, memory.Errorf(memory.CodeInvalid, "%s v%d: created_at %q is not an RFC 3339 time", v.Slug, v.Version, l.CreatedAt)
	}
	v.CreatedAt = at.UTC()
	return v, nil
}

// lineError names the line; the memory.Error code stays visible to ErrorCode.
func lineError(n int, err error) error { return fmt.Errorf("line %d: %w", n, err) }
