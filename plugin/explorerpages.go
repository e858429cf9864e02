package plugin

import (
	"sync"

	"github.com/agentenv/agentenv/runner/explorer"
)

// A Go plugin adds viewer pages to the explorer (`agent-env up`) from its
// init function, next to its plugin.Register call:
//
//	plugin.RegisterExplorerPage(explorer.PluginPage{
//		Plugin: "dice", Name: "rolls", Title: "Dice rolls",
//		Render: renderRolls,
//	})
//
// The page is served at /plugins/dice/rolls inside the explorer's layout;
// `up` serves the pages of active plugins only. Like Register, this list
// is package state filled by init.

var (
	explorerPagesMu sync.Mutex
	explorerPages   []explorer.PluginPage
)

// RegisterExplorerPage records a page; it is meant to be called from init.
// The explorer refuses a duplicate or unnamed page when it starts.
func RegisterExplorerPage(p explorer.PluginPage) {
	explorerPagesMu.Lock()
	defer explorerPagesMu.Unlock()
	explorerPages = append(explorerPages, p)
}

// ExplorerPages returns the pages recorded by RegisterExplorerPage whose
// plugin is active in r (all of them when r is nil), in registration
// order.
func ExplorerPages(r *Registry) []explorer.PluginPage {
	explorerPagesMu.Lock()
	defer explorerPagesMu.Unlock()
	var out []explorer.PluginPage
	for _, p := range explorerPages {
		if r != nil {
			if rec, ok := r.Lookup(p.Plugin); !ok || !rec.Active {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}
