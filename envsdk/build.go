package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/protocol"
)

// built is the frozen result of registration.
type built struct {
	card    protocol.EnvCard
	handler http.Handler
	mcp     *server.StreamableHTTPServer
	tools   map[string]bool
}

type serverKey struct{}

func (s *Server) withServer(ctx context.Context) context.Context {
	return context.WithValue(ctx, serverKey{}, s)
}

func serverFrom(ctx context.Context) *Server {
	s, _ := ctx.Value(serverKey{}).(*Server)
	return s
}

// build freezes registration once; later calls return the same result.
func (s *Server) build() (*built, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built != nil {
		if len(s.errs) > 0 {
			return nil, errors.Join(s.errs...)
		}
		return s.built, nil
	}
	b, errs := s.assemble()
	s.errs = append(s.errs, errs...)
	s.built = b
	if len(s.errs) > 0 {
		return nil, errors.Join(s.errs...)
	}
	return b, nil
}

func (s *Server) assemble() (*built, []error) {
	var errs []error
	name := s.Name()
	c := s.card
	c.Name = name
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = protocol.EnvProtocolVersion
	}
	if c.URL == "" {
		c.URL = protocol.DataPlanePath
	}
	if c.PreferredTransport == "" {
		c.PreferredTransport = protocol.TransportJSONRPC
	}
	c.AdditionalInterfaces = append([]protocol.Interface{}, s.card.AdditionalInterfaces...)
	if !s.opts.DisableMCP {
		declared := false
		for _, i := range c.AdditionalInterfaces {
			if i.Transport == protocol.TransportMCP && !declared {
				declared = true
				if s.opts.MCPPath == "" && strings.HasPrefix(i.URL, "/") {
					s.opts.MCPPath = i.URL // serve where the card says
				}
			}
		}
		if s.opts.MCPPath == "" {
			s.opts.MCPPath = protocol.DefaultMCPPath
		}
		if !declared {
			c.AdditionalInterfaces = append(c.AdditionalInterfaces, protocol.Interface{URL: s.opts.MCPPath, Transport: protocol.TransportMCP})
		}
	}

	// Operations come from registration only.
	ops := []string{}
	for _, m := range protocol.DataPlaneMethods {
		if (m == protocol.MethodDataReset && s.reset != nil) || (m == protocol.MethodDataAdd && s.add != nil) || (m == protocol.MethodDataGet && s.get != nil) {
			ops = append(ops, m)
		}
	}
	c.Capabilities.Operations = ops

	mux := http.NewServeMux()
	b := &built{tools: map[string]bool{}}

	// Tools: resolve names, reject duplicates, let card descriptors win.
	declaredTools := map[string]int{}
	var tools []protocol.ToolDescriptor
	for _, t := range s.card.Capabilities.Tools {
		n, err := resolveToolName(t.Name, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Name = n
		declaredTools[n] = len(tools)
		tools = append(tools, t)
	}
	var mcpSrv *server.MCPServer
	if !s.opts.DisableMCP {
		mcpSrv = server.NewMCPServer(name, s.opts.Version,
			server.WithToolCapabilities(true),
			server.WithOutputSchemaValidation(), // input: checkArgs (argcheck.go)
		)
	} else if len(s.tools) > 0 {
		errs = append(errs, errors.New("envsdk: tools registered on a server with DisableMCP"))
	}
	for _, reg := range s.tools {
		n, err := resolveToolName(reg.tool.Name, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if b.tools[n] {
			errs = append(errs, fmt.Errorf("envsdk: duplicate tool name %q", n))
			continue
		}
		b.tools[n] = true
		desc := protocol.ToolDescriptor{Name: n, Description: reg.tool.Description, InputSchema: reg.schema}
		if i, ok := declaredTools[n]; ok {
			desc = tools[i]
		} else {
			tools = append(tools, desc)
		}
		if mcpSrv != nil {
			mt := mcp.NewToolWithRawSchema(n, desc.Description, desc.InputSchema)
			mt.RawOutputSchema = reg.output
			mcpSrv.AddTool(mt, s.mcpToolHandler(n, reg, compileArgSchema(n, desc.InputSchema)))
		}
	}
	c.Capabilities.Tools = tools

	exts, extErrs := s.mountExtensions(mux)
	errs = append(errs, extErrs...)
	c.Capabilities.Extensions = exts
	b.card = c

	cardJSON, err := json.Marshal(c)
	if err != nil {
		errs = append(errs, fmt.Errorf("envsdk: encode card: %w", err))
	}
	mux.HandleFunc("GET "+protocol.EnvCardPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(cardJSON)
	})
	mux.HandleFunc("GET "+protocol.ReadyPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.Handle("POST "+protocol.DataPlanePath, http.HandlerFunc(s.serveDataPlane))
	if mcpSrv != nil {
		b.mcp = server.NewStreamableHTTPServer(mcpSrv,
			server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326),
			server.WithDisableLocalhostProtection(true),
			server.WithStreamableHTTPLogger(s.opts.Logger),
		)
		mux.Handle(s.opts.MCPPath, s.limitBody(s.unknownTools(b.tools, b.mcp)))
	}
	errs = append(errs, s.mountPages(mux, []string{s.opts.MCPPath, protocol.DataPlanePath, protocol.EnvCardPath,
		protocol.ReadyPath, InterfaceManifestPath, protocol.ExtensionPathPrefix})...)
	b.handler = mux
	return b, errs
}

func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// unknownTools answers tools/call for names that are not registered with
// an isError result, as the reference does; mcp-go would answer a JSON-RPC
// error. Every other request goes through.
func (s *Server) unknownTools(known map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(protocol.HeaderMCPSessionID) == "" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodToolsCall) &&
			len(msg.ID) > 0 && string(msg.ID) != "null" && !known[msg.Params.Name] {
			res, _ := json.Marshal(mcp.NewToolResultError("Unknown tool: " + msg.Params.Name))
			writeJSON(w, http.StatusOK, struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
			}{"2.0", msg.ID, res})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
