package cli

import (
	"flag"
	"os"

	"munin/internal/app"
)

// embedKeyEnv holds the embedding endpoint's bearer token. It has no flag:
// a flag's value shows in ps and /proc/*/cmdline.
const embedKeyEnv = "MUNIN_EMBED_KEY"

// embedFlags declares the embedding endpoint's flags (off by default) on a
// command that serves or fills vectors, and takes the key from the environment.
func embedFlags(fs *flag.FlagSet, cfg *app.Config) {
	fs.StringVar(&cfg.EmbedURL, "embed-url", "", "OpenAI-compatible embedding endpoint for meaning search, e.g. http://127.0.0.1:11434 (env MUNIN_EMBED_URL; empty: off, nothing is called; bearer token from env "+embedKeyEnv+")")
	fs.StringVar(&cfg.EmbedModel, "embed-model", "", "embedding model, e.g. nomic-embed-text (env MUNIN_EMBED_MODEL)")
	cfg.EmbedKey = os.Getenv(embedKeyEnv)
}
