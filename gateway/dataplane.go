package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// dataPlaneTimeout outlasts the largest data-load timeout.
const dataPlaneTimeout = 3600 * time.Second

// serveDataPlane is POST /agentenv: data/reset, data/add and
// data/get forwarded verbatim to the single backing MCP server. Only mcp-*
// REST_PROXY_URLS keys count, so a website next to one env does not break it.
//
// The data plane resets and reads the env's data, which no role rule
// covers: with a control token configured only its holder (the harness)
// may call it.
func (g *Gateway) serveDataPlane(w http.ResponseWriter, r *http.Request) {
	who, aerr := g.identify(r)
	if aerr == nil && g.cfg.ControlToken != "" && !who.operator {
		aerr = errControlToken
	}
	if aerr != nil {
		refuse(w, aerr, false)
		return
	}
	body, err := g.readBody(w, r)
	if err != nil {
		rpcFail(w, protocol.NullID, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "Invalid request"})
		return
	}
	req, perr := protocol.DecodeRequest(body)
	if perr != nil {
		msg := "Invalid request"
		if perr.Code == protocol.CodeParseError {
			msg = "Parse error"
		}
		rpcFail(w, req.ID, &protocol.Error{Code: perr.Code, Message: msg})
		return
	}
	switch req.Method {
	case protocol.MethodDataReset, protocol.MethodDataAdd, protocol.MethodDataGet:
	default:
		rpcFail(w, req.ID, &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "Method not found: " + req.Method})
		return
	}
	var targets []Upstream
	for _, u := range g.cfg.RESTProxies {
		if strings.HasPrefix(u.Key, "mcp-") {
			targets = append(targets, u)
		}
	}
	if len(targets) != 1 {
		rpcFail(w, req.ID, &protocol.Error{Code: protocol.CodeServerError,
			Message: fmt.Sprintf("env-level %s requires exactly one backing server, found %d", req.Method, len(targets))})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), dataPlaneTimeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, targets[0].URL+protocol.DataPlanePath, bytes.NewReader(body))
	if err != nil {
		rpcFail(w, req.ID, &protocol.Error{Code: protocol.CodeServerError, Message: "forward failed: " + err.Error()})
		return
	}
	out.Header.Set("Content-Type", "application/json")
	out.Header.Set(protocol.HeaderRole, who.role)
	resp, err := g.httpc.Do(out)
	if err != nil {
		rpcFail(w, req.ID, &protocol.Error{Code: protocol.CodeServerError, Message: "forward failed: " + err.Error()})
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		// Returning would end a shorter answer that looks complete;
		// aborting cuts the client's connection, so the cut shows.
		panic(http.ErrAbortHandler)
	}
}

func rpcFail(w http.ResponseWriter, id []byte, e *protocol.Error) {
	writeJSON(w, http.StatusOK, protocol.NewErrorResponse(id, e))
}
