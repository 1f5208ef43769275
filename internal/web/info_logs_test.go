package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestInfoLogDateFilters: the audit and search logs take ISO dates — a
// day, a minute, a second, with "T" or a space — in text fields that show
// them as typed; until includes the span it names, so since and until on
// the same second find a write of that second.
func TestInfoLogDateFilters(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.")
	u.recall(t, u.writerKey, "sqlite")
	rows, err := u.env.Svc.AuditLog(context.Background(), memory.NewCaller(u.adminKey), ref, memory.LogFilter{Limit: 10})
	if err != nil || len(rows) != 1 {
		t.Fatalf("audit rows %v, %v", rows, err)
	}
	at := rows[0].At.UTC()
	b := u.signIn(t, u.admin)

	for _, page := range []string{"/audit", "/searches"} {
		for _, f := range []struct{ since, until string }{
			{at.Format("2006-01-02"), at.Format("2006-01-02")},
			{at.Format("2006-01-02T15:04"), at.Format("2006-01-02T15:04")},
			{at.Format("2006-01-02 15:04"), at.Format("2006-01-02 15:04")},
			{at.Format("2006-01-02T15:04:05"), at.Add(time.Minute).Format("2006-01-02T15:04:05")},
		} {
			path := projPath + page + "?" + url.Values{"since": {f.since}, "until": {f.until}}.Encode()
			code, body := b.get(path)
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", path, code, errorText(body))
				continue
			}
			if strings.Contains(body, `class="none">No`) {
				t.Errorf("%s: the row of %s is filtered out", path, at)
			}
			if !strings.Contains(body, `name="since" id="since" value="`+f.since+`"`) || !strings.Contains(body, `type="text" name="until"`) {
				t.Errorf("%s: the form does not show the dates as typed", path)
			}
		}
	}
	// The audit row's own second, as since and until: until includes it.
	sec := at.Format("2006-01-02T15:04:05")
	if code, body := b.get(projPath + "/audit?since=" + sec + "&until=" + sec); code != http.StatusOK || !strings.Contains(body, `class="audit-row`) {
		t.Errorf("since=until=%s: %d, want the write of that second:\n%s", sec, code, errorText(body))
	}
	// A day before: nothing.
	day := at.AddDate(0, 0, -1).Format("2006-01-02")
	if _, body := b.get(projPath + "/audit?until=" + day); strings.Contains(body, `class="audit-row`) {
		t.Errorf("until=%s shows a write of the day after", day)
	}
}

// TestInfoLogBadDate: a date that does not read answers 400 on the log page
// itself, naming the field and the forms it takes, with the form as typed
// and no rows.
func TestInfoLogBadDate(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.")
	b := u.signIn(t, u.admin)
	for _, c := range []struct{ page, query, field string }{
		{"/audit", "since=04.12.2026", "since"},
		{"/audit", "until=2026-12-04T25:00", "until"},
		{"/searches", "since=yesterday", "since"},
		{"/searches", "until=2026-13-01", "until"},
	} {
		code, body := b.get(projPath + c.page + "?" + c.query)
		msg := html.UnescapeString(errorText(body))
		if code != http.StatusBadRequest {
			t.Errorf("%s?%s: %d, want 400", c.page, c.query, code)
		}
		if !strings.HasPrefix(msg, c.field+" must be an ISO date like 2026-12-04, 2026-12-04T10:30 or 2026-12-04T10:30:05 (UTC)") {
			t.Errorf("%s?%s: error %q does not name the field and the format", c.page, c.query, msg)
		}
		_, value, _ := strings.Cut(c.query, "=")
		if !strings.Contains(body, `name="`+c.field+`" id="`+c.field+`" value="`+value+`"`) {
			t.Errorf("%s?%s: the form does not keep what was typed", c.page, c.query)
		}
		if strings.Contains(body, `<table class="list"`) {
			t.Errorf("%s?%s: a bad filter still lists rows", c.page, c.query)
		}
	}
	// since after until is the service's refusal, shown the same way.
	if code, body := b.get(projPath + "/audit?since=2026-12-02&until=2026-12-01"); code != http.StatusBadRequest || !strings.Contains(body, `id="audit-filter"`) {
		t.Errorf("since after until: %d, want 400 on the audit page", code)
	}
}

// timeRe matches a time as the pages write it: a <time> to the second.
var timeRe = regexp.MustCompile(`<time class="ago" datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">`)

// TestInfoLogTimes: the log rows show their time as a <time> to the second
// (app.js shows it relative and keeps the exact one visible, exact-too).
func TestInfoLogTimes(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.")
	u.recall(t, u.writerKey, "sqlite")
	b := u.signIn(t, u.admin)
	for _, page := range []string{"/audit", "/searches"} {
		_, body := b.get(projPath + page)
		if !timeRe.MatchString(body) || !strings.Contains(body, `<td class="when exact-too"><time class="ago"`) {
			t.Errorf("%s: no row time to the second in a cell that keeps it:\n%s", page, body)
		}
	}
}
