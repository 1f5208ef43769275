package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"munin/internal/app"
	"munin/internal/embed"
	"munin/internal/memory"
	"munin/internal/portable"
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

// reindexEmbeddings is munin reindex --embeddings [W/P]: it fills missing
// vectors now, with a progress bar. It writes vectors into workspace files,
// so like import it claims the data directory (the server must be stopped).
func reindexEmbeddings(cfg app.Config, pos []string, stdout, stderr io.Writer) error {
	if cfg.EmbedURL == "" {
		return errors.New("reindex --embeddings needs --embed-url (env MUNIN_EMBED_URL) and --embed-model (env MUNIN_EMBED_MODEL)")
	}
	client, err := embed.NewClient(embed.ClientOptions{URL: cfg.EmbedURL, Model: cfg.EmbedModel, Key: cfg.EmbedKey})
	if err != nil {
		return err
	}
	var refs []memory.ProjectRef
	for _, p := range pos {
		ref, err := portable.ParseRef(p)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	// The app itself runs no worker: this command does the work in front.
	cfg.EmbedURL, cfg.EmbedModel, cfg.Exclusive = "", "", true
	return withApp(cfg, true, func(ctx context.Context, a *app.App) error {
		results, err := portable.FillEmbeddings(ctx, a.Store, client, refs, stderr)
		for _, r := range results {
			fmt.Fprintf(stdout, "%s: %d missing, %d embedded with %s in %v, %d left\n",
				r.Ref, r.Missing, r.Embedded, client.Model(), r.Duration.Round(time.Millisecond), r.Left)
		}
		return err
	})
}
