package agentsdk

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/http"
	"sync"

	"github.com/agentenv/agentenv/protocol"
)

// mcpRegistry is the mcp-config state: MCP servers by name, in add order.
type mcpRegistry struct {
	mu      sync.Mutex
	order   []string
	servers map[string]MCPServer
}

func newMCPRegistry() *mcpRegistry { return &mcpRegistry{servers: map[string]MCPServer{}} }

func (m *mcpRegistry) snapshot() map[string]MCPServer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]MCPServer, len(m.servers))
	for k, v := range m.servers {
		if v.Headers != nil {
			v.Headers = maps.Clone(v.Headers)
		}
		out[k] = v
	}
	return out
}

func (m *mcpRegistry) add(req *protocol.MCPConfigAddRequest) (*protocol.MCPConfigAddResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		if s.URL == req.URL {
			return nil, conflict("an MCP server with this url is already registered")
		}
	}
	name := req.Name
	if name == "" {
		for name == "" || m.servers[name].URL != "" {
			var b [4]byte
			_, _ = rand.Read(b[:])
			name = "mcp_" + hex.EncodeToString(b[:])
		}
	} else if _, dup := m.servers[name]; dup {
		return nil, conflict("an MCP server with this name is already registered")
	}
	srv := MCPServer{URL: req.URL}
	if len(req.Headers) > 0 {
		srv.Headers = maps.Clone(req.Headers)
	}
	m.servers[name] = srv
	m.order = append(m.order, name)
	return &protocol.MCPConfigAddResponse{Status: protocol.StatusAdded, Name: name, URL: req.URL}, nil
}

func (s *Server) mcpConfigExtension() *extension {
	return &extension{
		uri:         protocol.URIMCPConfig,
		description: "Register MCP servers (env tool endpoints) the agent may use.",
		endpoint:    protocol.AgentMCPConfigPath,
		methods: []*extMethod{
			{
				name: "add", verb: http.MethodPost,
				request:  fields([]string{"url"}, []string{"headers", "name"}),
				response: fields([]string{"status", "name", "url"}, nil),
				handle: func(_ *http.Request, body []byte) (any, error) {
					req, err := protocol.DecodeMCPConfigAdd(body)
					if err != nil {
						return nil, badRequest(err)
					}
					return s.mcp.add(req)
				},
			},
			{
				name: "list", verb: http.MethodGet,
				response: fields([]string{"mcp_servers"}, nil),
				handle: func(r *http.Request, _ []byte) (any, error) {
					if err := bodyless(r.URL.Query()); err != nil {
						return nil, err
					}
					out := protocol.MCPConfigListResponse{MCPServers: map[string]protocol.MCPServerInfo{}}
					for name, srv := range s.mcp.snapshot() {
						out.MCPServers[name] = protocol.MCPServerInfo{URL: srv.URL, HasHeaders: len(srv.Headers) > 0}
					}
					return out, nil
				},
			},
		},
	}
}
