package gateway

import (
	"sort"
	"sync"

	"github.com/agentenv/agentenv/protocol"
)

// wildcard is both the global role and the "every tool" key.
const wildcard = "*"

// roleRules is the role → (tool or "*") → disabled? model of
// docs/protocol.md. Role "*" is the global map.
type roleRules struct {
	mu    sync.RWMutex
	roles map[string]map[string]bool
}

func newRoleRules() *roleRules { return &roleRules{roles: map[string]map[string]bool{}} }

// disabled looks in the role's own map first, then in the global map; in
// each map an explicit tool entry beats that map's "*"; the first concrete
// value decides; the default is enabled.
func (r *roleRules) disabled(role, tool string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, m := range []map[string]bool{r.roles[role], r.roles[wildcard]} {
		if m == nil {
			continue
		}
		if v, ok := m[tool]; ok {
			return v
		}
		if v, ok := m[wildcard]; ok {
			return v
		}
	}
	return false
}

// apply runs one /tools/disable (disable=true) or /tools/enable request
// and returns that role's own map.
func (r *roleRules) apply(req *protocol.ToolAccessRequest, disable bool) protocol.ToolAccessResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.Role == wildcard && req.All:
		r.roles = map[string]map[string]bool{wildcard: {wildcard: disable}}
	case req.Role == wildcard:
		if len(req.Tools) > 0 {
			if r.roles[wildcard] == nil {
				r.roles[wildcard] = map[string]bool{}
			}
			for _, m := range r.roles {
				for _, t := range req.Tools {
					m[t] = disable
				}
			}
		}
	case req.All:
		r.roles[req.Role] = map[string]bool{wildcard: disable}
	default:
		if len(req.Tools) > 0 {
			m := r.roles[req.Role]
			if m == nil {
				m = map[string]bool{}
				r.roles[req.Role] = m
			}
			for _, t := range req.Tools {
				m[t] = disable
			}
		}
	}
	rules := rulesOf(r.roles[req.Role])
	return protocol.ToolAccessResponse{Role: req.Role, Disabled: rules.Disabled, Allowed: rules.Allowed}
}

// setRule applies a permission action of the trigger engine exactly like
// the /tools/* routes.
func (r *roleRules) setRule(role string, tools []string, all, disable bool) {
	r.apply(&protocol.ToolAccessRequest{Role: role, Tools: tools, All: all}, disable)
}

// snapshot returns every role's own map for /state.
func (r *roleRules) snapshot() map[string]protocol.RoleRules {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]protocol.RoleRules, len(r.roles))
	for role, m := range r.roles {
		out[role] = rulesOf(m)
	}
	return out
}

func rulesOf(m map[string]bool) protocol.RoleRules {
	rr := protocol.RoleRules{Disabled: []string{}, Allowed: []string{}}
	for k, v := range m {
		if v {
			rr.Disabled = append(rr.Disabled, k)
		} else {
			rr.Allowed = append(rr.Allowed, k)
		}
	}
	sort.Strings(rr.Disabled)
	sort.Strings(rr.Allowed)
	return rr
}
