package remote

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// fill sets every exported field of v, however deep, to a value of its own
// (n counts up), so a field a codec drops or rounds shows as a difference.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> \u2028\x01 ü", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Millisecond))
			return
		}
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(0.1 + float64(*n)/3)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), 123_456_789).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

func filled[T any]() T {
	var v T
	n := 0
	fill(reflect.ValueOf(&v).Elem(), &n)
	return v
}

// roundTrip sends v through the codec as a call's arguments or answer.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	var out T
	if err := decode(&buf, &out); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return out
}

func same[T any](t *testing.T, v T) {
	t.Helper()
	if got := roundTrip(t, v); !reflect.DeepEqual(got, v) {
		t.Errorf("%T changed across the hop:\n sent %+v\n  got %+v", v, v, got)
	}
}

// Every exported field of every call's arguments and answer crosses the hop
// unchanged — those the transports' JSON leaves out (Hit.Project,
// WriteResult.Replayed) too, and text with HTML, control and line
// separator characters.
func TestEveryFieldCrossesTheHop(t *testing.T) {
	same(t, filled[refArgs]())
	same(t, filled[appendArgs]())
	same(t, filled[replayArgs]())
	same(t, filled[getArgs]())
	same(t, filled[getReply]())
	same(t, filled[historyArgs]())
	same(t, filled[[]memory.VersionInfo]())
	same(t, filled[listArgs]())
	same(t, filled[listReply]())
	same(t, filled[sinceArgs]())
	same(t, filled[writtenReply]())
	same(t, filled[logArgs]())
	same(t, filled[pruneArgs]())
	same(t, filled[statsReply]())
	same(t, filled[entriesArgs]())
	same(t, filled[entriesReply]())
	same(t, filled[filterArgs]())
	same(t, filled[[]memory.AuditRow]())
	same(t, filled[[]memory.SearchRow]())
	same(t, filled[[]memory.MissedQuery]())
	same(t, filled[searchArgs]())
	same(t, filled[service.BudgetUsage]())
	same(t, filled[reply[bool]]())

	res := filled[memory.WriteResult]()
	if got := roundTrip(t, wireResult(res)).result(); !reflect.DeepEqual(got, res) || !got.Replayed {
		t.Errorf("write result changed across the hop: sent %+v, got %+v", res, got)
	}
	rep := roundTrip(t, replayReply{wireResult(res), true})
	if got := rep.Res.result(); !reflect.DeepEqual(got, res) || !rep.Replayed {
		t.Errorf("replay changed across the hop: sent %+v, got %+v (%v)", res, got, rep.Replayed)
	}
	hits := filled[[]memory.Hit]()
	if got := hitsOf(roundTrip(t, wireHits(hits))); !reflect.DeepEqual(got, hits) || got[1].Project.Workspace == "" {
		t.Errorf("hits changed across the hop:\n sent %+v\n  got %+v", hits, got)
	}
	we := toWire(&memory.Error{Code: memory.CodeBudgetExhausted, Message: "m", RetryAfter: 1500 * time.Millisecond}, "n")
	if got := roundTrip(t, we).fromWire(); !strings.Contains(got.Error(), "budget_exhausted: m") || got.(*memory.Error).RetryAfter != 1500*time.Millisecond {
		t.Errorf("error changed across the hop: %v", got)
	}
}

// BenchmarkCodecAppend is the encoding an Append costs across the hop: its
// arguments and its answer, each encoded and decoded once.
func BenchmarkCodecAppend(b *testing.B) {
	args := appendArgs{Ref: memory.ProjectRef{Workspace: "team", Project: "p"}, W: memory.Write{Slug: "notes/x", Title: "t",
		Content: strings.Repeat("a note of two hundred bytes ", 7), Tags: []string{"a", "b"}, Agent: "agent"}}
	answer := reply[writeResult]{Val: wireResult(memory.WriteResult{Slug: "notes/x", Version: 3, CreatedAt: time.Now().UTC()})}
	b.ReportAllocs()
	for range b.N {
		for _, v := range []any{args, answer} {
			var buf bytes.Buffer
			if err := encode(&buf, v); err != nil {
				b.Fatal(err)
			}
			out := reflect.New(reflect.TypeOf(v)).Interface()
			if err := decode(&buf, out); err != nil {
				b.Fatal(err)
			}
		}
	}
}
