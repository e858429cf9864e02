package envsdk

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/agentenv/agentenv/protocol"
)

// InterfaceManifestPath is where ServeInterfaceManifests lists manifests.
const InterfaceManifestPath = "/agentenv/interface-manifest"

// ServeInterfaceManifests serves urn:agentenv:get-interfaces/v1: GET InterfaceManifestPath lists the interface names, and
// GET InterfaceManifestPath/<name> returns that manifest (404 for others).
// Each manifest must be a JSON object; the env does not check its fields.
func (s *Server) ServeInterfaceManifests(manifests map[string]json.RawMessage) {
	s.register("interface manifests", func() {
		s.manifests = map[string]json.RawMessage{}
		for k, v := range manifests {
			if !json.Valid(v) || len(v) == 0 || v[0] != '{' {
				s.errs = append(s.errs, fmt.Errorf("envsdk: interface manifest %q: must be a JSON object", k))
				continue
			}
			s.manifests[k] = v
		}
	})
}

func (s *Server) mountManifests(mux *http.ServeMux) *protocol.Extension {
	if s.manifests == nil {
		return nil
	}
	names := make([]string, 0, len(s.manifests))
	for k := range s.manifests {
		names = append(names, k)
	}
	sort.Strings(names)
	mux.HandleFunc("GET "+InterfaceManifestPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, names)
	})
	mux.HandleFunc("GET "+InterfaceManifestPath+"/{iface}", func(w http.ResponseWriter, r *http.Request) {
		m, ok := s.manifests[r.PathValue("iface")]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "no such interface"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(m)
	})
	f := false
	params, _ := json.Marshal(map[string]string{"endpoint": InterfaceManifestPath})
	return &protocol.Extension{URI: protocol.URIGetInterfaces, Description: "Interface manifests of this environment.", Params: params, Required: &f}
}
