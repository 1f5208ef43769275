package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"munin/internal/api"
	"munin/internal/clientmeta"
	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
	"munin/internal/store"
)

// publicURL checks --public-url and normalizes it (the issuer is compared
// byte for byte by clients). Its origin is accepted by the Origin and Host
// checks: behind the proxy, browsers and the Host header name it.
//
// OAuth keeps its clients and grants in the control database; a cluster
// keeps control data in etcd, where nothing holds them yet, so the two do
// not go together.
func (c *Config) publicURL() error {
	if c.Server.PublicURL == "" {
		if c.Server.OAuthClients != "" {
			return errors.New("--oauth-clients needs --public-url: OAuth sign-in is off without it")
		}
		return nil
	}
	if c.Server.OAuthClients != "" {
		data, err := os.ReadFile(c.Server.OAuthClients)
		if err != nil {
			return fmt.Errorf("--oauth-clients: %w", err)
		}
		if c.staticClients, err = memory.ParseStaticClients(data); err != nil {
			return fmt.Errorf("--oauth-clients %s: %w", c.Server.OAuthClients, err)
		}
	}
	if c.Cluster.Enabled {
		return errors.New("cluster: OAuth sign-in (--public-url) is not available in cluster mode yet; agents use keys")
	}
	u, err := oauth.ParsePublicURL(c.Server.PublicURL)
	if err != nil {
		return err
	}
	c.Server.PublicURL = u
	c.Server.AllowedOrigins = append(c.Server.AllowedOrigins, u)
	return nil
}

// oauthResources are the resources a token may be bound to: MCP, and the
// REST API for scripts that sign in the same way.
func oauthResources(publicURL string) []string {
	return []string{publicURL + "/mcp", publicURL + api.Prefix}
}

// oauthOptions switch the service's OAuth sign-in on when the server has
// a public URL; nil otherwise.
func oauthOptions(c Config, st *store.Store) *service.OAuthOptions {
	if c.Server.PublicURL == "" {
		return nil
	}
	fetch := c.ClientMetadata
	if fetch.Logger == nil {
		fetch.Logger = c.Logger
	}
	return &service.OAuthOptions{
		Store:     st,
		Fetcher:   clientmeta.New(fetch),
		Resources: oauthResources(c.Server.PublicURL),
	}
}

// oauthConfig is the front door's OAuth configuration; nil when off.
func (a *App) oauthConfig() *oauth.Config {
	if a.cfg.Server.PublicURL == "" {
		return nil
	}
	return &oauth.Config{PublicURL: a.cfg.Server.PublicURL}
}

// configureOAuthClients makes the store's configured clients exactly those
// of --oauth-clients (none without the file) when OAuth is on.
func configureOAuthClients(c Config, st *store.Store) error {
	if c.Server.PublicURL == "" {
		return nil
	}
	if err := st.SetStaticOAuthClients(context.Background(), c.staticClients); err != nil {
		return fmt.Errorf("--oauth-clients: %w", err)
	}
	return nil
}
