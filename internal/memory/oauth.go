package memory

import "time"

// OAuth 2.1 sign-in (docs/security.md): Munin is its own authorization
// server. A person signs in with Munin keys and consents; the client then
// holds tokens that act exactly as those keys. The records below are what
// the control data keeps of it. A grant names key ids, never a key, and
// every token is stored as its HashToken only, as keys are.

// OAuthClientKind says how a client came to be known.
type OAuthClientKind string

const (
	// OAuthClientDCR registered itself (RFC 7591, POST /register); its
	// id is random.
	OAuthClientDCR OAuthClientKind = "dcr"
	// OAuthClientCIMD is known by its Client ID Metadata Document: its id is
	// the https URL the document is fetched from.
	OAuthClientCIMD OAuthClientKind = "cimd"
	// OAuthClientStatic is configured by the operator.
	OAuthClientStatic OAuthClientKind = "static"
)

// OAuthClient is a client that may ask for sign-in.
type OAuthClient struct {
	ID           string
	Kind         OAuthClientKind
	Name         string   // shown on the consent page and beside the agent in the audit log
	RedirectURIs []string // exact, but for the port of a loopback redirect (RFC 8252 §7.3)
	// SecretHash is the HashToken of a static confidential client's secret;
	// empty for public clients (token_endpoint_auth_method "none").
	SecretHash string
	CreatedAt  time.Time
}

// OAuthGrant is one consent: the keys a person signed in with, for one
// client and one resource. It is the family of every code and token issued
// under it; revoking it (or any of its keys) ends them all at once.
type OAuthGrant struct {
	ID         int64
	ClientID   string
	ClientName string
	Resource   string // the canonical URL tokens are bound to (RFC 8707), e.g. https://munin.example.com/mcp
	Scope      string
	KeyIDs     []int64
	CreatedAt  time.Time
	ExpiresAt  time.Time // no refresh after it; sign in again
	Revoked    bool
}

// OAuthCode is an authorization code: single use, short-lived, bound to
// its redirect URI and PKCE challenge (S256).
type OAuthCode struct {
	Hash        string // HashToken of the code
	GrantID     int64
	RedirectURI string
	Challenge   string // base64url(SHA-256(verifier)), RFC 7636 S256
	ExpiresAt   time.Time
}

// OAuthTokenKind tells access from refresh tokens.
type OAuthTokenKind string

const (
	OAuthAccess  OAuthTokenKind = "access"
	OAuthRefresh OAuthTokenKind = "refresh"
)

// OAuthToken is an issued token, kept as its hash.
type OAuthToken struct {
	Hash      string // HashToken of the token
	GrantID   int64
	Kind      OAuthTokenKind
	ExpiresAt time.Time
}

// Token prefixes: an access and a refresh token start with KeyPrefix, so
// that log redaction and secret scanners treat them as keys, and are told
// from a key by what follows it.
const (
	OAuthAccessPrefix  = KeyPrefix + "oat_"
	OAuthRefreshPrefix = KeyPrefix + "ort_"
	OAuthCodePrefix    = KeyPrefix + "oac_"
)

// OAuthMaxNewClients bounds the clients registered or fetched in a day
// that nobody has signed in with yet: registration needs no key, so without
// it a flood could grow the control database without end. A day's unused
// clients are pruned after a day.
const OAuthMaxNewClients = 1000

// OAuth lifetimes. Revocation does not wait for them: a revoked key or
// grant ends its tokens at once.
const (
	OAuthCodeTTL    = time.Minute
	OAuthAccessTTL  = time.Hour
	OAuthRefreshTTL = 30 * 24 * time.Hour // sliding: each refresh issues a new one
	OAuthGrantTTL   = 90 * 24 * time.Hour // a person signs in again after it
)
