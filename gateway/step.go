package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentenv/agentenv/protocol"
)

var defaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// stepTool renders a tool in the {name, description, parameters} shape of
// /step and /state, with annotations added when the child declared them.
func stepTool(e *toolEntry) protocol.StepTool {
	t := protocol.StepTool{Name: e.name, Description: e.description, Parameters: e.inputSchema}
	if len(bytes.TrimSpace(t.Parameters)) == 0 || string(bytes.TrimSpace(t.Parameters)) == "null" {
		t.Parameters = defaultParameters
	}
	if a := bytes.TrimSpace(e.annotations); len(a) > 0 && string(a) != "null" && string(a) != "{}" {
		t.Annotations = e.annotations
	}
	return t
}

// serveStep is POST /step, errors checked in the reference's order.
func (g *Gateway) serveStep(w http.ResponseWriter, r *http.Request) {
	who, aerr := g.identify(r)
	if aerr != nil {
		refuse(w, aerr, false)
		return
	}
	role := who.role
	if !g.ensureDiscovery(r.Context()) {
		writeJSON(w, http.StatusServiceUnavailable, protocol.StepError{Error: discoveryPendingMessage})
		return
	}
	b, err := g.readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, protocol.StepError{Error: "request body too large"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, protocol.StepError{Error: "Invalid JSON body"})
		return
	}
	req, err := protocol.DecodeStepRequest(b)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, protocol.StepError{Error: err.Error()})
		return
	}
	if req.Action == protocol.StepActionListTools {
		out := protocol.StepListTools{Tools: []protocol.StepTool{}}
		for _, e := range g.reg.snapshot() {
			if !g.rules.disabled(role, e.name) {
				out.Tools = append(out.Tools, stepTool(e))
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	res, err := g.call(r.Context(), &ToolCall{Source: SourceStep, Role: role, Tool: req.ToolName, Arguments: req.Arguments})
	if err != nil {
		var ce *CallError
		if !errors.As(err, &ce) {
			writeJSON(w, http.StatusInternalServerError, protocol.StepError{Error: "Tool execution failed (Exception): " + err.Error()})
			return
		}
		switch ce.Kind {
		case ErrToolDisabled:
			writeJSON(w, http.StatusForbidden, protocol.StepError{Error: ce.Error()})
		case ErrUnknownTool:
			writeJSON(w, http.StatusNotFound, protocol.StepError{Error: ce.Error()})
		case ErrToolTimeout:
			writeJSON(w, http.StatusGatewayTimeout, protocol.StepError{Error: ce.Error()})
		default:
			writeJSON(w, http.StatusInternalServerError, protocol.StepError{Error: "Tool execution failed (" + ce.ErrorKind + "): " + ce.Detail})
		}
		return
	}
	body, err := stepResult(res)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, protocol.StepError{Error: "Tool execution failed (ValueError): " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// stepResult renders a CallToolResult for /step: the child's fields in
// their order with null fields omitted, _meta also under "meta" (the
// reference's key), then changelog_id (and changelog_id_before, additive).
func stepResult(res *ToolResult) ([]byte, error) {
	fields, err := orderedFields(res.Raw)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	put := func(k string, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(jsonString(k))
		b.WriteByte(':')
		b.Write(v)
	}
	var meta json.RawMessage
	hasIsError := false
	for _, f := range fields {
		if f.key == "isError" {
			hasIsError = true
		}
		if string(bytes.TrimSpace(f.value)) == "null" || f.key == "changelog_id" || f.key == "changelog_id_before" || f.key == "meta" {
			continue
		}
		if f.key == "_meta" {
			meta = f.value
		}
		put(f.key, f.value)
	}
	if !hasIsError {
		put("isError", []byte("false"))
	}
	if meta != nil {
		put("meta", meta)
	}
	if !res.Native {
		put("changelog_id", int64JSON(res.ChangelogID))
		if res.ChangelogBefore != nil {
			put("changelog_id_before", int64JSON(res.ChangelogBefore))
		}
	} else {
		put("changelog_id", []byte("null"))
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// serveState is GET /state: every tool by server, not role-filtered.
func (g *Gateway) serveState(w http.ResponseWriter, r *http.Request) {
	g.ensureDiscovery(r.Context())
	reports := g.reg.reports()
	out := protocol.StateResponse{MCPServers: []protocol.StateServer{}}
	byServer := make([][]protocol.StepTool, len(g.cfg.Servers))
	var native []protocol.StepTool
	for _, e := range g.reg.snapshot() {
		if e.native() {
			native = append(native, stepTool(e))
		} else {
			byServer[e.server] = append(byServer[e.server], stepTool(e))
		}
	}
	for i, s := range g.cfg.Servers {
		ss := protocol.StateServer{Name: s.Name, Tools: byServer[i]}
		if ss.Tools == nil {
			ss.Tools = []protocol.StepTool{}
		}
		ss.Errors = reports[i].problems
		if len(reports[i].status) > 6 && reports[i].status[:6] == "error:" {
			ss.Errors = append(ss.Errors, reports[i].status[7:])
		}
		out.MCPServers = append(out.MCPServers, ss)
	}
	g.reg.mu.RLock()
	nativeProblems := append([]string(nil), g.reg.nativeProblems...)
	g.reg.mu.RUnlock()
	if len(native) > 0 || len(nativeProblems) > 0 {
		ss := protocol.StateServer{Name: "gateway", Tools: native, Errors: nativeProblems}
		if ss.Tools == nil {
			ss.Tools = []protocol.StepTool{}
		}
		out.MCPServers = append(out.MCPServers, ss)
	}
	out.ChangelogID = g.changelog.Read(r.Context())
	out.Roles = g.rules.snapshot()
	writeJSON(w, http.StatusOK, out)
}

// serveToolAccess is POST /tools/disable and /tools/enable.
func (g *Gateway) serveToolAccess(w http.ResponseWriter, r *http.Request, disable bool) {
	b, err := g.readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, protocol.StepError{Error: "request body too large"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, protocol.StepError{Error: "Invalid JSON body"})
		return
	}
	req, err := protocol.DecodeToolAccessRequest(b)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, protocol.StepError{Error: err.Error()})
		return
	}
	resp := g.rules.apply(req, disable)
	g.mcp.notifyChanged()
	writeJSON(w, http.StatusOK, resp)
}
