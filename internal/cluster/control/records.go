package control

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"munin/internal/memory"
)

// The layout under <prefix>/ctl/ (names are validated, so they contain no "/"):
//
//	ws/<workspace>                          wsRecord: the workspace exists
//	proj/<workspace>/<project>              projRecord: the project exists
//	budget/<workspace>/<project>/writes     decimal writes per hour (absent: 0, the server default)
//	budget/<workspace>/<project>/bytes      decimal content bytes per hour (absent: 0)
//	key/<id>                                keyRecord: a key, by its decimal id
//	keyhash/<hex sha256>                    the decimal id of the key with that token hash
//
// Each budget is a key of its own, so setting one is a plain put (guarded by
// the project's existence), like SQL's UPDATE of one column: concurrent
// changes of the two budgets never contend or lose each other. keyhash makes
// a token's hash unique (a transaction creates it with the key only if
// absent) and lets a node that has not yet seen a key find it with one Get.
const (
	dirWS      = "ws/"
	dirProj    = "proj/"
	dirBudget  = "budget/"
	dirKey     = "key/"
	dirKeyHash = "keyhash/"
)

// The budget fields: the last segment of a budget/ key.
const (
	budgetWrites = "writes"
	budgetBytes  = "bytes"
)

// wsRecord is the value of ws/<workspace>.
type wsRecord struct {
	CreatedAt int64 `json:"created_at"` // unix nanoseconds
}

// projRecord is the value of proj/<workspace>/<project>.
type projRecord struct {
	CreatedAt int64 `json:"created_at"` // unix nanoseconds
}

// keyRecord is the value of key/<id>. Workspace and Project are empty for a
// server-admin key. Times are unix nanoseconds, 0 for never.
type keyRecord struct {
	ID         int64  `json:"id"`
	Workspace  string `json:"workspace,omitempty"`
	Project    string `json:"project,omitempty"`
	Agent      string `json:"agent"`
	Role       string `json:"role"`
	Hash       string `json:"hash"`
	CreatedAt  int64  `json:"created_at"`
	LastUsedAt int64  `json:"last_used_at,omitempty"`
	RevokedAt  int64  `json:"revoked_at,omitempty"`
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// key turns a key record into what the service sees (never the hash).
func (r keyRecord) key() memory.Key {
	k := memory.Key{
		ID:        r.ID,
		Project:   memory.ProjectRef{Workspace: r.Workspace, Project: r.Project},
		Agent:     r.Agent,
		Role:      memory.Role(r.Role),
		CreatedAt: fromNanos(r.CreatedAt),
		Revoked:   r.RevokedAt != 0,
	}
	if r.LastUsedAt != 0 {
		t := fromNanos(r.LastUsedAt)
		k.LastUsedAt = &t
	}
	return k
}

// paths builds the etcd keys of one Control.
type paths struct{ ctl string } // "<prefix>/ctl/"

func (p paths) ws(name string) string { return p.ctl + dirWS + name }
func (p paths) proj(ref memory.ProjectRef) string {
	return p.ctl + dirProj + ref.Workspace + "/" + ref.Project
}
func (p paths) budgets(ref memory.ProjectRef) string {
	return p.ctl + dirBudget + ref.Workspace + "/" + ref.Project + "/"
}
func (p paths) key(id int64) string        { return p.ctl + dirKey + strconv.FormatInt(id, 10) }
func (p paths) keyHash(hash string) string { return p.ctl + dirKeyHash + hash }

// encode renders a record; the records are plain structs, so it cannot fail.
func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("control: encode %T: %v", v, err))
	}
	return string(b)
}

// decode reads a record.
func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

func parseID(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// parsed is one etcd key of the layout, taken apart.
type parsed struct {
	kind  string // dirWS, dirProj, dirBudget, dirKey, dirKeyHash, or "" for anything else
	ws    string
	ref   memory.ProjectRef
	field string // budgetWrites or budgetBytes
	id    int64
}

// parse takes an etcd key of the layout apart; unknown keys get kind "".
func (p paths) parse(etcdKey string) parsed {
	rel, ok := strings.CutPrefix(etcdKey, p.ctl)
	if !ok {
		return parsed{}
	}
	switch {
	case strings.HasPrefix(rel, dirWS):
		return parsed{kind: dirWS, ws: rel[len(dirWS):]}
	case strings.HasPrefix(rel, dirProj):
		ws, proj, ok := strings.Cut(rel[len(dirProj):], "/")
		if !ok {
			return parsed{}
		}
		return parsed{kind: dirProj, ref: memory.ProjectRef{Workspace: ws, Project: proj}}
	case strings.HasPrefix(rel, dirBudget):
		parts := strings.Split(rel[len(dirBudget):], "/")
		if len(parts) != 3 || (parts[2] != budgetWrites && parts[2] != budgetBytes) {
			return parsed{}
		}
		return parsed{kind: dirBudget, ref: memory.ProjectRef{Workspace: parts[0], Project: parts[1]}, field: parts[2]}
	case strings.HasPrefix(rel, dirKey):
		id, err := parseID(rel[len(dirKey):])
		if err != nil {
			return parsed{}
		}
		return parsed{kind: dirKey, id: id}
	case strings.HasPrefix(rel, dirKeyHash):
		return parsed{kind: dirKeyHash}
	}
	return parsed{}
}

// errRecord names a record that does not decode: data written by something
// other than this package, or by a newer version of it.
func errRecord(etcdKey string, err error) error {
	return fmt.Errorf("control record %s: %w", etcdKey, err)
}
