package config

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Setting is the declaration of one setting: how the command line and the
// environment name it and what it means. It is bound to one field of a
// Config (Config.Settings), so registering it as a flag or setting it from
// the environment writes that field.
type Setting struct {
	// Section is the Config section the field belongs to ("server", …).
	Section string
	// Flag is the command-line flag without dashes. For a secret it only
	// names the setting: a secret has no flag.
	Flag string
	// Env is the environment variable that sets it when the flag is not
	// given.
	Env string
	// Help says what it does, Note what its special values mean (shown
	// after the variable: "-1: no limit").
	Help, Note string
	// Secret settings come from the environment only: a flag's value shows
	// in ps and /proc/*/cmdline. Anchor names the flag whose help mentions
	// the secret's variable.
	Secret bool
	Anchor string
	// field points at the bound field: *string, *int, *float64, *bool,
	// *time.Duration, or a flag.Value for a field parsed another way.
	field any
}

// Section is one part of a Config, in the order help and docs list them.
type Section struct {
	Name, Doc string
}

// Sections are the sections of a Config in order.
var Sections = []Section{
	{"server", "The HTTP front door: where it listens and which browser origins it accepts."},
	{"storage", "The data directory and how SQLite writes it."},
	{"search", "Recall, its indexes and the search log."},
	{"limits", "What callers may do: the write budget, content size, requests, recalls and MCP sessions. Where -1 means no limit, the meaning says so."},
	{"embeddings", "Meaning search through an OpenAI-compatible embedding endpoint. Off by default: with no URL nothing is embedded and nothing is called."},
	{"cluster", "Cluster mode: ownership in etcd, workspace files streamed to a replica. Off by default."},
}

// Settings returns every setting, bound to c's fields, by section.
func (c *Config) Settings() []Setting {
	var all []Setting
	for _, sec := range []struct {
		name string
		list []Setting
	}{
		{"server", c.Server.settings()}, {"storage", c.Storage.settings()}, {"search", c.Search.settings()},
		{"limits", c.Limits.settings()}, {"embeddings", c.Embeddings.settings()}, {"cluster", c.Cluster.settings()},
	} {
		for _, s := range sec.list {
			s.Section = sec.name
			all = append(all, s)
		}
	}
	return all
}

// declared are the settings bound to a Config nobody uses, for looking
// declarations up by name.
var declared = (&Config{}).Settings()

// Lookup returns the declaration of the setting named flag.
func Lookup(flag string) (Setting, bool) {
	for _, s := range declared {
		if s.Flag == flag {
			return s, true
		}
	}
	return Setting{}, false
}

// EnvOf names the environment variable of the flag (false: it has none).
func EnvOf(flag string) (string, bool) {
	s, ok := Lookup(flag)
	if !ok || s.Secret {
		return "", false
	}
	return s.Env, true
}

// Usage is the flag's help text: what it does, then its variable, the
// meaning of its special values and the secrets anchored to it.
func (s Setting) Usage() string {
	extra := []string{"env " + s.Env}
	if s.Note != "" {
		extra = append(extra, s.Note)
	}
	for _, o := range declared {
		if o.Secret && o.Anchor == s.Flag {
			extra = append(extra, o.Help+" from env "+o.Env)
		}
	}
	return s.Help + " (" + strings.Join(extra, "; ") + ")"
}

// Register declares the setting as a flag of fs, bound to its field; the
// field's value now is the flag's default. A secret is not registered.
func (s Setting) Register(fs *flag.FlagSet) {
	if s.Secret {
		return
	}
	usage := s.Usage()
	switch p := s.field.(type) {
	case *string:
		fs.StringVar(p, s.Flag, *p, usage)
	case *int:
		fs.IntVar(p, s.Flag, *p, usage)
	case *float64:
		fs.Float64Var(p, s.Flag, *p, usage)
	case *bool:
		fs.BoolVar(p, s.Flag, *p, usage)
	case *time.Duration:
		fs.DurationVar(p, s.Flag, *p, usage)
	case flag.Value:
		fs.Var(p, s.Flag, usage)
	default:
		panic(fmt.Sprintf("config: setting %s has a field of type %T", s.Flag, s.field))
	}
}

// SetDefault sets the bound field to the value of the same setting in
// defaults (the field a Config filled by app.DefaultConfig binds).
func (s Setting) SetDefault(defaults Setting) {
	reflect.ValueOf(s.field).Elem().Set(reflect.ValueOf(defaults.field).Elem())
}

// LoadSecret sets a secret's field from its environment variable, if set.
func (s Setting) LoadSecret() {
	if p, ok := s.field.(*string); ok && s.Secret {
		if v, ok := os.LookupEnv(s.Env); ok {
			*p = v
		}
	}
}

// Value is the bound field's value as a flag would print it.
func (s Setting) Value() string {
	switch p := s.field.(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *bool:
		return strconv.FormatBool(*p)
	case *time.Duration:
		return p.String()
	case flag.Value:
		return p.String()
	}
	return ""
}

// list is a comma-separated flag: blanks around the values and empty
// values are dropped, and a later flag replaces an earlier one.
type list []string

func (l *list) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Set replaces the list with the values in v.
func (l *list) Set(v string) error {
	*l = nil
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l = append(*l, e)
		}
	}
	return nil
}

// replication is --replication: "sync" (false) or "async" (true).
type replication bool

func (r *replication) String() string {
	if r != nil && *r {
		return "async"
	}
	return "sync"
}

// Set accepts sync or async, nothing else (not even another case).
func (r *replication) Set(v string) error {
	switch v {
	case "sync":
		*r = false
	case "async":
		*r = true
	default:
		return fmt.Errorf("--replication must be sync or async, got %q", v)
	}
	return nil
}
