package portable

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"time"

	"munin/internal/memory"
)

// Line is one version in an export file. The field order is the order of
// the JSON keys, so the same history always gives the same bytes. Tools that
// write import files (the cold-start measurement) use it too.
//
// ValidUntil and Supersedes came with stage 11 and are left out when the
// version has none, so a version without them is written byte for byte as
// before and a file written before them imports unchanged.
type Line struct {
	Slug      string   `json:"slug"`
	Version   int      `json:"version"`
	Title     string   `json:"title"`
	Content   string   `json:"content"`
	Tags      []string `json:"tags"`
	Agent     string   `json:"agent"`
	CreatedAt string   `json:"created_at"`
	Deleted   bool     `json:"deleted"`
	// ValidUntil is RFC 3339 in UTC with nanoseconds, as CreatedAt.
	ValidUntil string   `json:"valid_until,omitempty"`
	Supersedes []string `json:"supersedes,omitempty"`
}

// fileLine is any line of an export file: a version (Line's fields), or a
// proposal (only the member "proposal", see ProposalLine).
type fileLine struct {
	Line
	Proposal *ProposalLine `json:"proposal,omitempty"`
}

// record is what one line holds: a version, or a proposal when proposal is set.
type record struct {
	version  memory.Version
	proposal *memory.Proposal
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
func (e *encoder) write(v memory.Version) error { return e.enc.Encode(lineOf(v)) }

// lineOf is the line of a version.
func lineOf(v memory.Version) Line {
	tags := v.Tags
	if tags == nil {
		tags = []string{}
	}
	return Line{
		Slug: v.Slug, Version: v.Version, Title: v.Title, Content: v.Content, Tags: tags,
		Agent: v.Agent, CreatedAt: formatTime(v.CreatedAt), Deleted: v.Deleted,
		ValidUntil: formatOptional(v.ValidUntil), Supersedes: v.Supersedes,
	}
}

// writeProposal encodes one proposal as one line.
func (e *encoder) writeProposal(p memory.Proposal) error {
	return e.enc.Encode(struct {
		Proposal *ProposalLine `json:"proposal"`
	}{proposalLine(p)})
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

// next returns the next record and its line number; io.EOF at the end.
// Blank lines are skipped. A line that is not exactly one JSON object with
// known fields and valid UTF-8 is an invalid error naming the line.
func (d *decoder) next() (record, int, error) {
	for d.sc.Scan() {
		d.n++
		b := bytes.TrimSpace(d.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		r, err := parseLine(b)
		if err != nil {
			return r, d.n, lineError(d.n, err)
		}
		return r, d.n, nil
	}
	if err := d.sc.Err(); err != nil {
		return record{}, d.n + 1, lineError(d.n+1, fmt.Errorf("read: %w", err))
	}
	return record{}, d.n, io.EOF
}

// parseLine decodes one line strictly.
func parseLine(b []byte) (record, error) {
	// encoding/json would quietly turn invalid UTF-8 and lone surrogate
	// escapes into U+FFFD; an import must not change a byte of what it
	// stores, so it refuses instead.
	if err := memory.CheckJSONText(b); err != nil {
		return record{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l fileLine
	if err := dec.Decode(&l); err != nil {
		return record{}, memory.Errorf(memory.CodeInvalid, "not a version object (nor a proposal): %v", err)
	}
	if dec.More() {
		return record{}, memory.Errorf(memory.CodeInvalid, "more than one JSON value on the line")
	}
	if l.Proposal != nil {
		if !reflect.ValueOf(l.Line).IsZero() {
			return record{}, memory.Errorf(memory.CodeInvalid, "a proposal line has the member \"proposal\" and no other")
		}
		p, err := parseProposal(*l.Proposal)
		return record{proposal: &p}, err
	}
	v, err := parseVersion(l.Line)
	return record{version: v}, err
}

// parseVersion turns a version line into a version.
func parseVersion(l Line) (memory.Version, error) {
	// The slug first: it is what a reader of the error needs to find the line.
	if err := memory.ValidateSlug(l.Slug); err != nil {
		return memory.Version{}, err
	}
	return parseWritten(fmt.Sprintf("%s v%d", l.Slug, l.Version), l)
}

// parseWritten reads the fields of a version line (or of a proposal's
// write, see ProposalLine); what names it in errors.
func parseWritten(what string, l Line) (memory.Version, error) {
	v := memory.Version{Slug: l.Slug, Version: l.Version, Title: l.Title, Content: l.Content,
		Tags: l.Tags, Agent: l.Agent, Deleted: l.Deleted, Supersedes: l.Supersedes}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	var err error
	if v.CreatedAt, err = parseTime(what, "created_at", l.CreatedAt); err != nil {
		return v, err
	}
	v.ValidUntil, err = parseOptional(what, "valid_until", l.ValidUntil)
	return v, err
}

// formatTime writes a time as export files carry it: RFC 3339 in UTC with
// nanoseconds.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// formatOptional is formatTime of an optional time, "" for none.
func formatOptional(t *time.Time) string {
	if t == nil {
		return ""
	}
	return formatTime(*t)
}

// parseTime reads a required time field of the thing what names.
func parseTime(what, field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, memory.Errorf(memory.CodeInvalid, "%s: %s is missing", what, field)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, memory.Errorf(memory.CodeInvalid, "%s: %s %q is not an RFC 3339 time", what, field, s)
	}
	return t.UTC(), nil
}

// parseOptional is parseTime of an optional field: nil when it is absent.
func parseOptional(what, field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := parseTime(what, field, s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// lineError names the line; the memory.Error code stays visible to ErrorCode.
func lineError(n int, err error) error { return fmt.Errorf("line %d: %w", n, err) }
