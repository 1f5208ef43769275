package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var tokenRE = regexp.MustCompile(`munin_[A-Za-z0-9_-]{43}`)

// newKey creates a write key for agent in w/p of the data directory dir and
// returns its token.
func newKey(t *testing.T, dir, project, agent string) string {
	t.Helper()
	err, out := run(t, "key", "create", "--data", dir, "--workspace", "w", "--project", project, "--agent", agent)
	token := tokenRE.FindString(out)
	if err != nil || token == "" {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	return token
}

// stdioSession runs `munin stdio args` with the given stdin lines; stdin
// ends after the last line, so stdio answers every call and returns.
func stdioSession(t *testing.T, args []string, lines ...string) (stdout, stderr string) {
	t.Helper()
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, errOut bytes.Buffer
	if err := stdio(args, in, &out, &errOut); err != nil {
		t.Fatalf("stdio %v: %v\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// answers indexes stdio's JSON-RPC answers by id.
func answers(t *testing.T, stdout string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result map[string]any  `json:"result"`
			Error  any             `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		if msg.Error != nil {
			t.Fatalf("JSON-RPC error: %s", line)
		}
		out[string(msg.ID)] = msg.Result
	}
	return out
}

// TestStdioTwoKeys: `munin stdio --key A --key B` and MUNIN_KEY=A,B serve one
// agent in two projects: initialize names both, the first as the default,
// and a remember naming the second key's project writes there under that
// key's agent.
func TestStdioTwoKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tokP, tokQ := newKey(t, dir, "p", "pat"), newKey(t, dir, "q", "quinn")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}`
	remember := func(slug string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"project":"w/q","slug":"` + slug + `","content":"written over stdio"}}}`
	}
	for _, tc := range []struct {
		name, env, slug string
		args            []string
	}{
		{"repeated --key", "", "from/flags", []string{"--key", tokP, "--key", tokQ}},
		{"MUNIN_KEY list", tokP + ", " + tokQ, "from/env", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MUNIN_KEY", tc.env)
			if tc.env == "" {
				os.Unsetenv("MUNIN_KEY")
			}
			stdout, stderr := stdioSession(t, append([]string{"--data", dir}, tc.args...),
				initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, remember(tc.slug))
			got := answers(t, stdout)
			instr, _ := got["1"]["instructions"].(string)
			for _, want := range []string{"\n- w/p (write, pat) — the default", "\n- w/q (write, quinn)"} {
				if !strings.Contains(instr, want) {
					t.Errorf("initialize instructions lack %q:\n%s", want, instr)
				}
			}
			res := got["2"]
			sc, _ := res["structuredContent"].(map[string]any)
			if res["isError"] == true || sc["project"] != "w/q" || sc["version"] != 1.0 {
				t.Fatalf("remember with project w/q: %v", res)
			}
			if warned := strings.Contains(stderr, "warning: --key"); warned != (tc.args != nil) {
				t.Errorf("warning about --key: %v, want %v: %q", warned, tc.args != nil, stderr)
			}
			err, export := run(t, "export", "w/q", "--data", dir)
			if err != nil || !strings.Contains(export, `"slug":"`+tc.slug+`"`) || !strings.Contains(export, `"agent":"quinn"`) {
				t.Fatalf("export of w/q after the remember: %v\n%s", err, export)
			}
		})
	}
}

// TestStdioRefusesUnknownSecondKey: a list with one key that does not
// authenticate is refused at start, naming its position — not the key, not
// a project — whether it comes from MUNIN_KEY or from a repeated --key.
func TestStdioRefusesUnknownSecondKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok := newKey(t, dir, "p", "pat")
	unknown := "munin_" + strings.Repeat("x", 43)
	check := func(name string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: stdio served a list with an unknown key", name)
		}
		msg := err.Error()
		if !strings.Contains(msg, "key 2 of 2 is unknown or revoked") || strings.Contains(msg, unknown) || strings.Contains(msg, "w/p") {
			t.Errorf("%s: %q, want the position of the unknown key and neither key nor project", name, msg)
		}
	}
	t.Setenv("MUNIN_KEY", tok+","+unknown)
	check("MUNIN_KEY", refused(t, "stdio", "--data", dir))
	os.Unsetenv("MUNIN_KEY")
	check("--key", refused(t, "stdio", "--data", dir, "--key", tok, "--key", unknown))
}
