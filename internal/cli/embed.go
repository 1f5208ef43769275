package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/portable"
)

// embedSettings are the embedding endpoint's settings (off by default),
// taken by the commands that serve or fill vectors; the key is read from
// the environment only.
var embedSettings = []string{"embed-url", "embed-model", "embed-key"}

// reindexEmbeddings is munin reindex --embeddings [W/P]: it fills missing
// vectors now, with a progress bar. It writes vectors into workspace files,
// so like import it claims the data directory (the server must be stopped).
func reindexEmbeddings(cfg app.Config, pos []string, stdout, stderr io.Writer) error {
	if cfg.Embeddings.URL == "" {
		return errors.New("reindex --embeddings needs --embed-url (env MUNIN_EMBED_URL) and --embed-model (env MUNIN_EMBED_MODEL)")
	}
	client, err := app.NewEmbedClient(cfg.Embeddings)
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
	cfg.Embeddings.URL, cfg.Embeddings.Model, cfg.Exclusive = "", "", true
	return withApp(cfg, true, func(ctx context.Context, a *app.App) error {
		results, err := portable.FillEmbeddings(ctx, a.Store, client, refs, stderr)
		for _, r := range results {
			fmt.Fprintf(stdout, "%s: %d missing, %d embedded with %s in %v, %d left\n",
				r.Ref, r.Missing, r.Embedded, client.Model(), r.Duration.Round(time.Millisecond), r.Left)
		}
		return err
	})
}
