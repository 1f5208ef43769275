package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestSimilarOnTheSettingsPage: the settings page shows the duplicate hint
// beside review, with its help text; the admin switches it off and on; a
// bad value is 400 and a write key's post is refused, and neither changes
// the setting.
func TestSimilarOnTheSettingsPage(t *testing.T) {
	u := newUI(t)
	setting := func() string {
		t.Helper()
		v, err := u.env.Svc.ProjectSimilar(context.Background(), memory.NewCaller(u.adminKey), ref)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := u.signIn(t, u.admin)
	code, body := a.get(projPath + "/settings")
	if code != http.StatusOK {
		t.Fatalf("settings page: %d", code)
	}
	for _, want := range []string{"Warn agents when a new entry repeats an existing one", `id="similar-on" checked`,
		`id="similar-mode">on<`, `action="` + projPath + `/settings/similar"`, `id="review-form"`} {
		if !strings.Contains(body, want) {
			t.Errorf("settings page lacks %q", want)
		}
	}
	if code, body := a.post(projPath+"/settings/similar", url.Values{"similar": {"off"}}); code != http.StatusSeeOther {
		t.Fatalf("switch the hint off: %d %s", code, errorText(body))
	}
	if got := setting(); got != memory.SimilarOff {
		t.Fatalf("similar after the form: %q, want off", got)
	}
	if _, body := a.get(projPath + "/settings"); !strings.Contains(body, `id="similar-off" checked`) || !strings.Contains(body, `id="similar-mode">off<`) ||
		!strings.Contains(body, "The duplicate hint is off") {
		t.Errorf("the settings page does not show the hint off (and say so)")
	}
	if code, body := a.post(projPath+"/settings/similar", url.Values{"similar": {"sometimes"}}); code != http.StatusBadRequest || !strings.Contains(body, "on or off") {
		t.Errorf("similar=sometimes: %d %s; want 400 naming on or off", code, errorText(body))
	}
	if code, _ := u.signIn(t, u.writer).post(projPath+"/settings/similar", url.Values{"similar": {"on"}}); code != http.StatusForbidden {
		t.Errorf("a write key switches the hint: %d, want 403", code)
	}
	if got := setting(); got != memory.SimilarOff {
		t.Fatalf("refused forms changed the setting to %q", got)
	}
	if code, _ := a.post(projPath+"/settings/similar", url.Values{"similar": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("switch the hint on: %d", code)
	}
	if got := setting(); got != memory.SimilarOn {
		t.Errorf("similar after switching on: %q", got)
	}
}
