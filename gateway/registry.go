package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// toolEntry is one tool the gateway exposes.
type toolEntry struct {
	name string
	// server is the index of the owning child; -1 for native tools.
	server    int
	childName string
	// raw is the descriptor served on /mcp tools/list: the child's bytes
	// verbatim (only "name" rewritten in prefix mode).
	raw         json.RawMessage
	description string
	inputSchema json.RawMessage
	annotations json.RawMessage
	readOnly    bool
	handler     func(ctx context.Context, call *ToolCall) (json.RawMessage, error)
	recorded    func(ctx context.Context, call *ToolCall) (NativeResult, error)
}

func (e *toolEntry) native() bool { return e.server < 0 }

// NativeTool is a gateway-native tool (list_website_urls, get_time).
type NativeTool struct {
	// Descriptor is the MCP tool descriptor JSON; its "name" is the tool name.
	Descriptor json.RawMessage
	// Last places the tool after the children's tools (get_time); otherwise
	// it goes first (list_website_urls).
	Last bool
	// Call runs the tool and returns a CallToolResult JSON.
	Call func(ctx context.Context, call *ToolCall) (json.RawMessage, error)
	// CallRecorded, when set, is used instead of Call: it also says what
	// the trajectory records in place of the result (NativeResult).
	CallRecorded func(ctx context.Context, call *ToolCall) (NativeResult, error)
}

// serverState is the discovery state of one child.
type serverState struct {
	attempted bool
	listed    bool
	tools     []json.RawMessage
	listErr   error
	// problems are collision and name errors of the last merge.
	problems []string
}

// registry merges the children's tools with the native ones.
type registry struct {
	prefix     PrefixMode
	collisions CollisionMode
	names      []string // server names in config order

	mu      sync.RWMutex
	servers []*serverState
	natives []namedNative
	tools   []*toolEntry
	byName  map[string]*toolEntry
	// failErr is set when a collision failed the whole discovery (fail mode).
	failErr string
	// nativeProblems are collisions reported under the "gateway" server.
	nativeProblems []string
	version        uint64
}

type namedNative struct {
	name string
	NativeTool
}

func newRegistry(cfg *Config) *registry {
	r := &registry{prefix: cfg.Prefix, collisions: cfg.Collisions, byName: map[string]*toolEntry{}}
	for _, s := range cfg.Servers {
		r.names = append(r.names, s.Name)
		r.servers = append(r.servers, &serverState{})
	}
	return r
}

var validToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

type descriptorFields struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
}

// lookup returns the entry of an exposed name.
func (r *registry) lookup(name string) (*toolEntry, bool) {
	r.mu.RLock()
	e, ok := r.byName[name]
	r.mu.RUnlock()
	return e, ok
}

// snapshot returns the ordered tool list.
func (r *registry) snapshot() []*toolEntry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools
}

// setServer records a listing of server i (tools nil with err on failure)
// and rebuilds; it reports whether the exposed tool set changed.
func (r *registry) setServer(i int, tools []json.RawMessage, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.servers[i]
	st.attempted = true
	st.listErr = err
	if err == nil {
		st.listed = true
		st.tools = tools
	}
	return r.rebuildLocked()
}

// setNative adds or replaces (d != nil) or removes (d == nil) a native tool.
// It returns an error when a backing server already exposes the name.
func (r *registry) setNative(name string, d *NativeTool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.natives[:0:0]
	for _, n := range r.natives {
		if n.name != name {
			out = append(out, n)
		}
	}
	if d != nil {
		if e, ok := r.byName[name]; ok && !e.native() {
			return false, fmt.Errorf("'%s' is already registered by a backing server", name)
		}
		out = append(out, namedNative{name: name, NativeTool: *d})
	}
	r.natives = out
	return r.rebuildLocked(), nil
}

// backingHas reports whether a backing server exposes the name.
func (r *registry) backingHas(name string) bool {
	e, ok := r.lookup(name)
	return ok && !e.native()
}

// rebuildLocked recomputes the merged view: natives first, children in
// config order, natives marked Last at the end. Collisions follow
// r.collisions; a backing tool beats a native one of the same name.
func (r *registry) rebuildLocked() bool {
	var children []*toolEntry
	byName := map[string]*toolEntry{}
	owner := map[string]string{}
	failErr := ""
	for i, st := range r.servers {
		st.problems = nil
		for _, raw := range st.tools {
			var d descriptorFields
			if err := json.Unmarshal(raw, &d); err != nil || d.Name == "" {
				st.problems = append(st.problems, "skipped a tool descriptor without a valid name")
				continue
			}
			exposed := d.Name
			desc := raw
			if r.prefix == PrefixServer {
				if !strings.HasPrefix(d.Name, r.names[i]+"_") {
					exposed = r.names[i] + "_" + d.Name
				}
				if !validToolName.MatchString(exposed) {
					st.problems = append(st.problems, fmt.Sprintf("Invalid tool name '%s': must match ^[a-zA-Z0-9_-]{1,64}$", exposed))
					continue
				}
				if exposed != d.Name {
					desc = renameDescriptor(raw, exposed)
				}
			}
			if prev, dup := owner[exposed]; dup {
				msg := fmt.Sprintf("Duplicate tool name '%s': already registered from '%s', cannot register from '%s'", exposed, prev, r.names[i])
				st.problems = append(st.problems, msg)
				if failErr == "" {
					failErr = msg
				}
				continue
			}
			owner[exposed] = r.names[i]
			e := &toolEntry{name: exposed, server: i, childName: d.Name, raw: desc, inputSchema: d.InputSchema, annotations: d.Annotations}
			if d.Description != nil {
				e.description = *d.Description
			}
			var ann struct {
				ReadOnly bool `json:"readOnlyHint"`
			}
			_ = json.Unmarshal(d.Annotations, &ann)
			e.readOnly = ann.ReadOnly
			children = append(children, e)
			byName[exposed] = e
		}
	}
	r.failErr = ""
	if r.collisions == CollisionFail && failErr != "" {
		// The reference: any duplicate fails the whole discovery.
		r.failErr = failErr
		children = nil
		byName = map[string]*toolEntry{}
	}
	r.nativeProblems = nil
	var first, last []*toolEntry
	for _, n := range r.natives {
		if _, taken := byName[n.name]; taken {
			r.nativeProblems = append(r.nativeProblems,
				fmt.Sprintf("Duplicate tool name '%s': already registered from '%s', cannot register from 'gateway'", n.name, owner[n.name]))
			continue
		}
		var d descriptorFields
		_ = json.Unmarshal(n.Descriptor, &d)
		e := &toolEntry{name: n.name, server: -1, childName: n.name, raw: n.Descriptor, inputSchema: d.InputSchema, annotations: d.Annotations, handler: n.Call, recorded: n.CallRecorded}
		if d.Description != nil {
			e.description = *d.Description
		}
		var ann struct {
			ReadOnly bool `json:"readOnlyHint"`
		}
		_ = json.Unmarshal(d.Annotations, &ann)
		e.readOnly = ann.ReadOnly
		byName[n.name] = e
		if n.Last {
			last = append(last, e)
		} else {
			first = append(first, e)
		}
	}
	tools := append(append(first, children...), last...)
	changed := !sameTools(r.tools, tools)
	r.tools = tools
	r.byName = byName
	if changed {
		r.version++
	}
	return changed
}

func sameTools(a, b []*toolEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].server != b[i].server || !bytes.Equal(a[i].raw, b[i].raw) {
			return false
		}
	}
	return true
}

// discovered reports whether discovery has succeeded: every server has
// completed a listing attempt, at least one succeeded (or there are none),
// and no collision failed the pass in fail mode. Servers that failed keep
// being retried in the background and are reported per server.
func (r *registry) discovered() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.failErr != "" {
		return false
	}
	anyListed := len(r.servers) == 0
	for _, st := range r.servers {
		if !st.attempted {
			return false
		}
		anyListed = anyListed || st.listed
	}
	return anyListed
}

// serverReport is the per-server discovery state for /readyz and /state.
type serverReport struct {
	name     string
	status   string // "waiting", "ready" or "error: <text>"
	problems []string
}

func (r *registry) reports() []serverReport {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]serverReport, len(r.servers))
	for i, st := range r.servers {
		rep := serverReport{name: r.names[i], status: "waiting", problems: append([]string(nil), st.problems...)}
		switch {
		case st.listErr != nil:
			rep.status = "error: " + st.listErr.Error()
		case st.listed:
			rep.status = "ready"
		}
		if st.listErr != nil && st.listed {
			rep.problems = append(rep.problems, "last re-listing failed: "+st.listErr.Error())
		}
		out[i] = rep
	}
	return out
}

// renameDescriptor replaces the top-level "name" of a raw descriptor,
// keeping every other byte.
func renameDescriptor(raw json.RawMessage, name string) json.RawMessage {
	fields, err := orderedFields(raw)
	if err != nil {
		return raw
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(f.key))
		b.WriteByte(':')
		if f.key == "name" {
			b.Write(jsonString(name))
		} else {
			b.Write(f.value)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

type rawField struct {
	key   string
	value json.RawMessage
}

// orderedFields splits a JSON object into its fields in document order.
func orderedFields(raw []byte) ([]rawField, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []rawField
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, rawField{k, v})
	}
	return out, nil
}
