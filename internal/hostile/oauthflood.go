//go:build hostile

package hostile

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
)

// oauthFlood (attack 16, issue 25) is an unauthenticated flood of the
// OAuth endpoints, which take no key: the authorize page for clients that
// do not exist, the token endpoint with codes and refresh tokens nobody
// issued, and client registrations — each worker in turn. The server
// answers them from the anonymous slots of its admission and bounds what
// registrations store (memory.OAuthMaxNewClients), so keyed traffic must
// not notice.
func oauthFlood(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	challenge := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for n := worker; ctx.Err() == nil; n++ {
		var req *http.Request
		switch n % 3 {
		case 0:
			q := url.Values{"response_type": {"code"}, "client_id": {"nobody-" + randomWord(rng, 12)},
				"redirect_uri": {"https://claude.ai/api/mcp/auth_callback"}, "state": {randomWord(rng, 16)},
				"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/authorize?"+q.Encode(), nil)
		case 1:
			form := url.Values{"grant_type": {"authorization_code"}, "client_id": {"nobody"}, "code": {"munin_oac_" + randomWord(rng, 43)},
				"code_verifier": {randomWord(rng, 43)}, "redirect_uri": {"https://claude.ai/api/mcp/auth_callback"}}
			if rng.IntN(2) == 0 {
				form = url.Values{"grant_type": {"refresh_token"}, "client_id": {"nobody"}, "refresh_token": {"munin_ort_" + randomWord(rng, 43)}}
			}
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/token", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		default:
			body := fmt.Sprintf(`{"client_name":"flood %s","redirect_uris":["https://%s.example/cb"]}`, randomWord(rng, 8), randomWord(rng, 8))
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/register", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
		}
		send(hc, req)
	}
}
