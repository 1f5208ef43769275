package portable

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"munin/internal/memory"
)

// okProposal is a pending proposal line that imports into any project.
const okProposal = `{"proposal":{"slug":"fresh/two","version":0,"title":"t","content":"proposed","tags":[],"agent":"pia","created_at":"2026-01-02T03:04:05.5Z","deleted":false,"base_version":0,"state":"pending"}}`

// TestImportRefusesBadTrustedLines: a malformed valid_until, a supersedes
// naming a bad slug, a proposal line with an unknown state and the other
// ways a stage-11 line can be wrong are invalid errors naming the line and
// the problem, and nothing of their batch is written — not the good
// version and proposal before them either.
func TestImportRefusesBadTrustedLines(t *testing.T) {
	src := openStore(t, t.TempDir())
	ref := ensure(t, src, "acme", "backend")
	trusted(t, src, ref)
	exported := string(export(t, src, ref))
	var stored string // the export's line of the approved proposal for notes/new
	for _, l := range strings.Split(exported, "\n") {
		if strings.Contains(l, `{"proposal":{"slug":"notes/new"`) {
			stored = l
		}
	}
	if stored == "" {
		t.Fatalf("export lacks the approved proposal:\n%s", exported)
	}
	version := func(extra string) string {
		return strings.Replace(okLine, `"deleted":false`, `"deleted":false`+extra, 1)
	}
	proposal := func(old, new string) string { return strings.Replace(okProposal, old, new, 1) }
	seventeen := make([]string, 17)
	for i := range seventeen {
		seventeen[i] = fmt.Sprintf(`"s/%d"`, i)
	}
	tombstone := `{"slug":"fresh/one","version":2,"title":"","content":"","tags":[],"agent":"a","created_at":"2026-01-03T00:00:00Z","deleted":true`
	cases := []struct {
		name, line string
		code       memory.Code
		want       []string
	}{
		{"malformed valid_until", version(`,"valid_until":"next week"`), memory.CodeInvalid, []string{"fresh/one v1", "valid_until", "RFC 3339"}},
		{"valid_until past 2262", version(`,"valid_until":"3000-01-01T00:00:00Z"`), memory.CodeInvalid, []string{"valid_until", "1678–2262"}},
		{"supersedes a bad slug", version(`,"supersedes":["../etc"]`), memory.CodeInvalid, []string{"fresh/one v1", "supersedes", "slug"}},
		{"supersedes itself", version(`,"supersedes":["fresh/one"]`), memory.CodeInvalid, []string{"supersedes", "itself"}},
		{"supersedes twice", version(`,"supersedes":["b","b"]`), memory.CodeInvalid, []string{"supersedes", "twice"}},
		{"supersedes 17", version(`,"supersedes":[` + strings.Join(seventeen, ",") + `]`), memory.CodeInvalid, []string{"supersedes", "17", "at most 16"}},
		{"tombstone with valid_until", tombstone + `,"valid_until":"2027-01-01T00:00:00Z"}`, memory.CodeInvalid, []string{"fresh/one v2", "valid_until"}},
		{"tombstone with supersedes", tombstone + `,"supersedes":["x"]}`, memory.CodeInvalid, []string{"fresh/one v2", "supersedes"}},
		{"unknown state", proposal(`"pending"`, `"maybe"`), memory.CodeInvalid, []string{"proposal for fresh/two", "state", `"maybe"`}},
		{"no state", proposal(`,"state":"pending"`, ``), memory.CodeInvalid, []string{"proposal for fresh/two", "state"}},
		{"proposal beside version fields", `{"slug":"fresh/two",` + okProposal[1:], memory.CodeInvalid, []string{"proposal", "no other"}},
		{"unknown member in a proposal", proposal(`"state"`, `"votes":3,"state"`), memory.CodeInvalid, []string{"votes"}},
		{"proposal with a bad slug", proposal(`fresh/two`, `../two`), memory.CodeInvalid, []string{"proposal", "slug"}},
		{"proposal without created_at", proposal(`"2026-01-02T03:04:05.5Z"`, `""`), memory.CodeInvalid, []string{"proposal for fresh/two", "created_at"}},
		{"proposal with malformed valid_until", proposal(`"base_version"`, `"valid_until":"soon","base_version"`), memory.CodeInvalid, []string{"proposal", "valid_until"}},
		{"proposal supersedes a bad slug", proposal(`"base_version"`, `"supersedes":["a b"],"base_version"`), memory.CodeInvalid, []string{"proposal for fresh/two", "supersedes"}},
		{"proposed empty content", proposal(`"proposed"`, `" "`), memory.CodeInvalid, []string{"proposal for fresh/two", "content must not be empty"}},
		{"negative base", proposal(`"base_version":0`, `"base_version":-1`), memory.CodeInvalid, []string{"base_version"}},
		{"four similar", proposal(`"state"`, `"similar":[{"slug":"a","title":"","score":1},{"slug":"b","title":"","score":1},{"slug":"c","title":"","score":1},{"slug":"d","title":"","score":1}],"state"`),
			memory.CodeInvalid, []string{"similar", "at most 3"}},
		{"pending with a decision", proposal(`"state":"pending"`, `"state":"pending","decided_by":"rita"`), memory.CodeInvalid, []string{"pending proposal has no decided_by"}},
		{"approved without version", proposal(`"state":"pending"`, `"state":"approved","decided_by":"rita","decided_at":"2026-01-03T00:00:00Z"`),
			memory.CodeInvalid, []string{"approved proposal needs the version"}},
		{"rejected without decided_at", proposal(`"state":"pending"`, `"state":"rejected","decided_by":"rita","reason":"no"`), memory.CodeInvalid, []string{"needs decided_at"}},
		{"malformed decided_at", proposal(`"state":"pending"`, `"state":"rejected","decided_by":"rita","decided_at":"Tuesday"`), memory.CodeInvalid, []string{"decided_at", "RFC 3339"}},
		{"reason too long", proposal(`"state":"pending"`, `"state":"rejected","decided_by":"rita","decided_at":"2026-01-03T00:00:00Z","reason":"`+strings.Repeat("x", memory.MaxReason+1)+`"`),
			memory.CodeTooLarge, []string{"reason"}},
		{"stored proposal changed", strings.Replace(stored, `"Restart the worker twice."`, `"Restart the worker once."`, 1), memory.CodeConflict,
			[]string{"proposal for notes/new by pia", "content"}},
		{"stored decision changed", strings.Replace(stored, `"decided_by":"rita"`, `"decided_by":"rolf"`, 1), memory.CodeConflict,
			[]string{"proposal for notes/new by pia", "decision"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := okLine + "\n" + okProposal + "\n" + c.line + "\n"
			refused(t, ref, exported, file, ImportOptions{}, c.code, append([]string{"line 3"}, c.want...))
		})
	}
}

// TestImportProposalDecisionsMoveForward: an export taken while a proposal
// waited, imported, then one taken after it was approved brings the
// approval (its version and its decision); the first file imported again
// changes nothing, as a pending line is an earlier state of a decided
// proposal.
func TestImportProposalDecisionsMoveForward(t *testing.T) {
	src := openStore(t, t.TempDir())
	ref := ensure(t, src, "acme", "backend")
	write(t, src, ref, memory.Write{Slug: "runbook", Title: "Runbook", Content: "Restart once."})
	id := propose(t, src, ref, memory.Write{Slug: "runbook", Title: "Runbook", Content: "Restart twice.", Agent: "pia"})
	waiting := export(t, src, ref)
	if _, err := src.Approve(ctx, ref, id, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	approved := export(t, src, ref)

	dst := openStore(t, t.TempDir())
	if res, err := Import(ctx, dst, ref, bytes.NewReader(waiting), ImportOptions{}); err != nil || res.ProposalsImported != 1 {
		t.Fatalf("import of the waiting proposal: %+v, %v", res, err)
	}
	if n, err := dst.PendingCount(ctx, ref); err != nil || n != 1 {
		t.Fatalf("pending after the first import: %d, %v; want 1", n, err)
	}
	res, err := Import(ctx, dst, ref, bytes.NewReader(approved), ImportOptions{})
	if err != nil || res.Imported != 1 || res.Skipped != 1 || res.ProposalsImported != 1 || res.ProposalsSkipped != 0 {
		t.Fatalf("import of the approval: %+v, %v; want version 2 and the decision imported", res, err)
	}
	if got := export(t, dst, ref); !bytes.Equal(got, approved) {
		t.Fatalf("after the approval's import:\n%s\nwant\n%s", got, approved)
	}
	if n, err := dst.PendingCount(ctx, ref); err != nil || n != 0 {
		t.Fatalf("pending after the approval's import: %d, %v; want 0", n, err)
	}
	res, err = Import(ctx, dst, ref, bytes.NewReader(waiting), ImportOptions{})
	if err != nil || res.ProposalsSkipped != 1 || res.ProposalsImported != 0 {
		t.Fatalf("the older file again: %+v, %v; want its proposal skipped", res, err)
	}
	if got := export(t, dst, ref); !bytes.Equal(got, approved) {
		t.Fatalf("the older file undid the approval:\n%s", got)
	}
	// Every imported version and proposal, and the imported decision, has
	// its audit row.
	if audit := countAudit(t, dst, "acme"); audit["import"] != 2+1+1 || len(audit) != 1 {
		t.Fatalf("audit rows %v, want 4 import rows", audit)
	}
}

// TestImportKeepsThePendingBound: pending proposals count against the
// project's bound as proposed ones do; the line past it is refused, naming
// the line, and its batch is not written.
func TestImportKeepsThePendingBound(t *testing.T) {
	var file strings.Builder
	for i := range memory.MaxPendingProposals + 1 {
		file.WriteString(strings.Replace(okProposal, `"fresh/two"`, fmt.Sprintf(`"fresh/p%03d"`, i), 1) + "\n")
	}
	s := openStore(t, t.TempDir())
	ref := memory.ProjectRef{Workspace: "acme", Project: "backend"}
	res, err := Import(ctx, s, ref, strings.NewReader(file.String()), ImportOptions{BatchSize: 100})
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), fmt.Sprintf("line %d", memory.MaxPendingProposals+1)) {
		t.Fatalf("import past the bound: %v, want budget_exhausted naming line %d", err, memory.MaxPendingProposals+1)
	}
	if n, err := s.PendingCount(ctx, ref); err != nil || n != memory.MaxPendingProposals || res.ProposalsImported != memory.MaxPendingProposals {
		t.Fatalf("pending after the refused line: %d, %v (result %+v); want %d", n, err, res, memory.MaxPendingProposals)
	}
}

// TestBackupCarriesTrustedMemory: a backup is a copy of the workspace file,
// so a restored backup holds the pending proposal, the decided ones and the
// expired and superseded entries, and answers as the source does — proposal
// ids included.
func TestBackupCarriesTrustedMemory(t *testing.T) {
	dir := t.TempDir()
	src := openStore(t, dir)
	ref := ensure(t, src, "acme", "backend")
	trusted(t, src, ref)
	dest := filepath.Join(t.TempDir(), "copy")
	if _, err := Backup(ctx, dir, dest, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	restored := openStore(t, dest)
	sameState(t, "the restored backup", state(t, src, ref), state(t, restored, ref))
	pending, _, err := restored.Proposals(ctx, ref, memory.ProposalPending, "pia", 0, 10)
	if err != nil || len(pending) != 1 || pending[0].Slug != "facts/until" || pending[0].ValidUntil == nil {
		t.Fatalf("pia's pending proposals in the backup: %+v, %v", pending, err)
	}
	orig, _, err := src.Proposals(ctx, ref, memory.ProposalPending, "pia", 0, 10)
	if err != nil || len(orig) != 1 || orig[0].ID != pending[0].ID {
		t.Fatalf("pia's pending proposals in the source: %+v, %v; want the backup's id %d", orig, err, pending[0].ID)
	}
	if v, _, err := restored.Get(ctx, ref, "z/old", 0); err != nil || v.SupersededBy != "a/successor" {
		t.Fatalf("z/old in the backup: %+v, %v; want superseded by a/successor", v, err)
	}
	if v, _, err := restored.Get(ctx, ref, "facts/until", 0); err != nil || v.ValidUntil == nil {
		t.Fatalf("facts/until in the backup: %+v, %v; want its valid_until", v, err)
	}
}
