// The official TypeScript SDK's OAuth client signs in to Munin (issue 25),
// headless, driven by clients_oauth_test.go: discovery from the 401,
// registration (DCR, or CIMD when a client metadata URL is given), PKCE, the
// authorize page played as a person would (paste the key, allow), the code
// exchange, tool calls with the access token, then a refresh forced by a
// junk access token. SDK v2 (@modelcontextprotocol/client) by default, which
// also checks iss (RFC 9207); MUNIN_OAUTH_SDK=v1 takes v1
// (@modelcontextprotocol/sdk), the one most MCP hosts ship today.
// Usage: node oauth_flow.mjs MCP_URL KEY TOKENS_FILE [CLIENT_METADATA_URL]
// It prints one JSON summary line ({"summary":…}) and exits 0, or prints
// {"fatal":…} and exits 1. Tokens never go to stdout: the last ones are
// written to TOKENS_FILE (mode 0600) for the test's revocation check.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const v1 = process.env.MUNIN_OAUTH_SDK === 'v1';
const { Client, StreamableHTTPClientTransport, UnauthorizedError } = v1
  ? { ...(await import('@modelcontextprotocol/sdk/client/index.js')),
      ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
      ...(await import('@modelcontextprotocol/sdk/client/auth.js')) }
  : await import('@modelcontextprotocol/client');

const [mcpUrl, key, tokensFile, cimdUrl] = process.argv.slice(2);
// Never listened on: the script reads the Location of the consent's answer.
// Loopback with any port matches the registered http://127.0.0.1:1/callback.
const redirect = 'http://127.0.0.1:1/callback';
const junk = 'junk-access-token'; // what the server must refuse with 401

// s is what a real client would persist between runs.
const s = { saves: 0 };
let authorizeUrl;
const provider = {
  get redirectUrl() { return redirect; },
  clientMetadataUrl: cimdUrl || undefined, // undefined → DCR; set → CIMD when the server advertises it
  get clientMetadata() {
    return { client_name: 'munin-ci-oauth', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
             response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'native' };
  },
  clientInformation: () => s.client,
  saveClientInformation: (c) => { s.client = c; },
  tokens: () => s.tokens,
  saveTokens: (t) => { s.tokens = t; s.saves++; },
  saveCodeVerifier: (v) => { s.verifier = v; },
  codeVerifier: () => s.verifier,
  discoveryState: () => s.disc,
  saveDiscoveryState: (d) => { s.disc = d; },
  invalidateCredentials: (what) => {
    s.invalidated = [...(s.invalidated ?? []), what];
    if (what === 'all' || what === 'tokens') delete s.tokens;
    if (what === 'all' || what === 'client') delete s.client;
  },
  redirectToAuthorization: (u) => { authorizeUrl = u; },
  // state ties the answer to this request; the SDK sends it, the script
  // checks it comes back unchanged.
  state: () => (s.state = randomBytes(16).toString('base64url')),
};

// unescape undoes html/template's escaping of attribute values.
const unescape = (v) => v.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (_, e) => {
  const named = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e.toLowerCase()];
  if (named) return named;
  return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
});

// gist is a page's text without its markup, shortened: what an error says.
const gist = (page) => {
  const main = page.match(/<main[^>]*>([\s\S]*?)<\/main>/)?.[1] ?? page;
  return unescape(main.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()).slice(0, 400);
};

// hidden returns the hidden fields of the form with id in html: the
// authorization request the page carries along, and the CSRF token.
function hidden(html, id) {
  const start = html.indexOf(`id="${id}"`);
  if (start < 0) throw new Error(`the page has no form ${id}: ${gist(html)}`);
  const form = html.slice(start, html.indexOf('</form>', start));
  const fields = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields[m[1]] = unescape(m[2]);
  return fields;
}

// signIn plays the person on the authorize page: GET it, paste the key
// (step signin), then allow (step allow, with the session's cookie and
// CSRF token). It returns the URL the browser would be sent back to.
async function signIn(url) {
  let res = await fetch(url, { redirect: 'manual' });
  let html = await res.text();
  if (res.status !== 200) throw new Error(`GET authorize page: ${res.status}: ${gist(html)}`);
  const post = (body, cookie) => fetch(new URL('/authorize', url), {
    method: 'POST', redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(body),
  });
  res = await post({ ...hidden(html, 'oauth-signin-form'), key, step: 'signin' });
  html = await res.text();
  if (res.status !== 200) throw new Error(`sign-in: ${res.status}: ${gist(html)}`);
  const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  if (!cookie) throw new Error('sign-in set no session cookie');
  res = await post({ ...hidden(html, 'oauth-decide-form'), step: 'allow' }, cookie);
  if (res.status !== 303 && res.status !== 302) throw new Error(`allow: ${res.status}: ${gist(await res.text())}`);
  return new URL(res.headers.get('location'));
}

// connect runs a fresh client over a fresh transport, as a restarted app would.
async function connect() {
  const client = new Client({ name: 'munin-ci-oauth', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  return { client, transport, done: client.connect(transport) };
}

// call calls a tool and returns its structured result; a tool error throws.
async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent ?? r.content;
}

try {
  const summary = { sdk: v1 ? 'v1' : 'v2', registration: cimdUrl ? 'cimd' : 'dcr' };
  let { client, transport, done } = await connect();
  try {
    await done;
    throw new Error('connected without signing in');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!authorizeUrl) throw new Error('the SDK asked for no authorization');
  summary.client_id = s.client?.client_id;
  summary.client_id_is_url = Boolean(cimdUrl) && s.client?.client_id === cimdUrl;
  summary.authorize = { path: authorizeUrl.pathname, resource: authorizeUrl.searchParams.get('resource'),
                        scope: authorizeUrl.searchParams.get('scope'), method: authorizeUrl.searchParams.get('code_challenge_method') };
  const cb = await signIn(authorizeUrl);
  if (cb.searchParams.get('error')) throw new Error(`authorize answered ${cb.searchParams.get('error')}: ${cb.searchParams.get('error_description')}`);
  summary.callback = { iss: cb.searchParams.get('iss'), state: cb.searchParams.getAll('state').length === 1 && cb.searchParams.get('state') === s.state, code: cb.searchParams.has('code') };
  // Redeems code + PKCE verifier + resource; v2 takes the whole answer and
  // checks iss against the metadata, v1 takes the code alone.
  await transport.finishAuth(v1 ? cb.searchParams.get('code') : cb.searchParams);
  summary.token = { received: Boolean(s.tokens?.access_token), type: s.tokens?.token_type, refresh: Boolean(s.tokens?.refresh_token),
                    expires_in: s.tokens?.expires_in };
  await client.close();

  ({ client, transport, done } = await connect());
  await done;
  summary.remember = await call(client, 'remember', { slug: 'oauth/ci', content: 'Written by the SDK signed in with OAuth.' });
  summary.recall = await call(client, 'recall', { query: 'signed in with OAuth' });

  // A junk access token: the next call gets 401 and the SDK refreshes
  // with its refresh token (which the server rotates), then retries.
  const before = { access: s.tokens.access_token, refresh: s.tokens.refresh_token, saves: s.saves };
  s.tokens = { ...s.tokens, access_token: junk };
  summary.after_refresh = await call(client, 'recall', { query: 'signed in with OAuth' });
  summary.refreshed = s.saves > before.saves && Boolean(s.tokens?.access_token) && s.tokens.access_token !== junk &&
    s.tokens.access_token !== before.access;
  summary.refresh_rotated = Boolean(s.tokens?.refresh_token) && s.tokens.refresh_token !== before.refresh;
  summary.invalidated = s.invalidated ?? [];
  await client.close();
  writeFileSync(tokensFile, JSON.stringify({ access_token: s.tokens.access_token, refresh_token: s.tokens.refresh_token }), { mode: 0o600 });
  console.log(JSON.stringify({ summary }));
} catch (e) {
  console.log(JSON.stringify({ fatal: `${e?.name ?? 'Error'}: ${e?.message ?? e}` }));
  process.exit(1);
}
