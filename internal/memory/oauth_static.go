package memory

import (
	"encoding/json"
	"strings"
)

// OAuthMaxStaticClients bounds the clients one configuration file names.
const OAuthMaxStaticClients = 100

// ParseStaticClients reads the operator's pre-registered OAuth clients
// (--oauth-clients): a JSON array of objects, each a client_id plus the
// metadata a registration would carry (client_name, redirect_uris, …,
// checked as ParseClientRegistration checks them). They are public
// clients, as every client here: a secret is refused. A client_id is
// 1–128 characters of [A-Za-z0-9._~-]: an https URL would be a metadata
// document's, and "munin_" starts Munin's own ids and tokens. An error
// names the entry by its position.
func ParseStaticClients(data []byte) ([]OAuthClient, error) {
	if err := CheckJSONText(data); err != nil {
		return nil, Errorf(CodeInvalid, "OAuth clients file: %s", PublicText(err))
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, Errorf(CodeInvalid, "OAuth clients file: must be a JSON array of client objects")
	}
	if len(entries) > OAuthMaxStaticClients {
		return nil, Errorf(CodeInvalid, "OAuth clients file: %d clients, at most %d", len(entries), OAuthMaxStaticClients)
	}
	out := make([]OAuthClient, 0, len(entries))
	seen := map[string]bool{}
	for i, raw := range entries {
		var head struct {
			ID     string `json:"client_id"`
			Secret string `json:"client_secret"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, Errorf(CodeInvalid, "OAuth clients file, client %d: client_id must be a string", i+1)
		}
		switch {
		case !staticClientID(head.ID):
			return nil, Errorf(CodeInvalid, "OAuth clients file, client %d: client_id must be 1-128 characters of [A-Za-z0-9._~-], not starting with munin_", i+1)
		case seen[head.ID]:
			return nil, Errorf(CodeInvalid, "OAuth clients file, client %d: client_id %q is named twice", i+1, head.ID)
		case head.Secret != "":
			return nil, Errorf(CodeInvalid, "OAuth clients file, client %d: client_secret is not supported: clients are public and use PKCE", i+1)
		}
		seen[head.ID] = true
		reg, err := ParseClientRegistration(raw)
		if err != nil {
			return nil, Errorf(CodeInvalid, "OAuth clients file, client %d (%s): %s", i+1, head.ID, PublicText(err))
		}
		out = append(out, OAuthClient{ID: head.ID, Kind: OAuthClientStatic, Name: reg.Name, RedirectURIs: reg.RedirectURIs})
	}
	return out, nil
}

// staticClientID tells a configured client's id apart from every id
// Munin or a metadata document makes.
func staticClientID(id string) bool {
	if id == "" || len(id) > 128 || strings.HasPrefix(id, KeyPrefix) {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '.' && c != '_' && c != '~' && c != '-' {
			return false
		}
	}
	return true
}
