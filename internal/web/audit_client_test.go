package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestAuditShowsClient: the audit page names the OAuth client a write was
// made through beside its agent ("alice via Claude"), escaped like any
// text, and nothing beside a write made with the key itself.
func TestAuditShowsClient(t *testing.T) {
	u := newUI(t)
	ctx := context.Background()
	key := memory.NewCaller(u.writerKey)
	for _, c := range []memory.Caller{key.WithClient("Claude"), key, key.WithClient("<b>Evil</b>")} {
		if _, err := u.env.Svc.Remember(ctx, c, service.RememberRequest{Slug: "a", Content: "x " + c.Client()}); err != nil {
			t.Fatal(err)
		}
	}
	code, body := u.signIn(t, u.reader).get(projPath + "/audit")
	if code != http.StatusOK {
		t.Fatalf("audit: %d %s", code, errorText(body))
	}
	for _, s := range []string{
		`<td class="agent">alice <span class="client">via Claude</span></td>`,
		`<td class="agent">alice</td>`,
		`<td class="agent">alice <span class="client">via &lt;b&gt;Evil&lt;/b&gt;</span></td>`,
	} {
		if strings.Count(body, s) != 1 {
			t.Errorf("audit page has %q %d times, want once:\n%s", s, strings.Count(body, s), body)
		}
	}
}
