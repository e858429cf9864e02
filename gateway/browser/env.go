package browser

import (
	"log/slog"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/registry/fsobject"
)

// Environment variables read by FromEnv.
const (
	// EnvCDPURL is the browser's DevTools endpoint; unset means no browser.
	EnvCDPURL = "BROWSER_CDP_URL"
	// EnvObjectStoreDir is the root of a file object store (the registry's
	// objects folder, or one a harness collects) that screenshots go to.
	EnvObjectStoreDir = "GATEWAY_OBJECT_STORE_DIR"
)

// FromEnv builds the source the environment asks for: nil (and no error)
// when BROWSER_CDP_URL is unset, so the gateway has no browser tools.
// websites are the gateway's WEBSITE_URLS (Config.Websites), which
// browser_navigate opens by name.
func FromEnv(getenv func(string) string, websites []gateway.Upstream, log *slog.Logger) (*Source, error) {
	cdp := getenv(EnvCDPURL)
	if cdp == "" {
		return nil, nil
	}
	o := &Options{Logger: log, Websites: map[string]string{}}
	for _, u := range websites {
		o.Websites[u.Key] = u.URL
	}
	if dir := getenv(EnvObjectStoreDir); dir != "" {
		st, err := fsobject.New(dir, nil)
		if err != nil {
			return nil, &gateway.ConfigError{Var: EnvObjectStoreDir, Reason: err.Error()}
		}
		o.Objects = st
	}
	return New(cdp, o)
}
