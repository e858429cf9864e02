package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// A live env instance is read through its gateway's control routes with
// the same client the env steps use (runner/gwclient): GET /state, POST
// /step list_tools per role, GET /clock/state, GET /triggers/state and
// each backing server's data/get behind /svc/mcp-<name>. The control
// token comes from the instance record and stays on the server: it is
// never put in a page or an API answer.

// liveTimeout bounds all the reads of one live env view, so a hung
// gateway costs a page at most this long.
const liveTimeout = 5 * time.Second

// RoleTools is the merged tool list one role sees (POST /step list_tools).
type RoleTools struct {
	Role  string   `json:"role"`
	Tools []string `json:"tools"`
	Error string   `json:"error,omitempty"`
}

// LiveTool is one tool of the gateway (GET /state), with the roles that
// may call it.
type LiveTool struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Description string `json:"description,omitempty"`
	// Enabled maps each shown role to whether it sees the tool.
	Enabled map[string]bool `json:"enabled"`
}

// ServerData is one backing server's data plane (data/get).
type ServerData struct {
	Server string `json:"server"`
	Parts  any    `json:"parts,omitempty"`
	Error  string `json:"error,omitempty"`
}

// EnvLive is one env instance read through its gateway.
type EnvLive struct {
	Instance EnvInstanceView `json:"instance"`
	// Reachable is false when the instance is not deployed, has no
	// gateway, or the gateway did not answer; Note says why.
	Reachable bool   `json:"reachable"`
	Note      string `json:"note,omitempty"`

	Roles      []RoleTools                   `json:"roles"`
	Tools      []LiveTool                    `json:"tools"`
	RoleRules  map[string]protocol.RoleRules `json:"role_rules,omitempty"`
	ToolsError string                        `json:"tools_error,omitempty"`

	Clock      *protocol.ClockState `json:"clock,omitempty"`
	ClockError string               `json:"clock_error,omitempty"`

	Triggers      *protocol.TriggersState `json:"triggers,omitempty"`
	TriggersError string                  `json:"triggers_error,omitempty"`

	Data []ServerData `json:"data"`
	// Control reports whether the write actions are enabled
	// (--allow-control).
	Control bool `json:"control"`
}

// liveInstance reads an env instance record with its control token.
type liveInstance struct {
	view         EnvInstanceView
	providerType string
	controlToken string
	servers      []string
}

func (s *Server) readEnvInstance(ctx context.Context, id string) (*liveInstance, error) {
	var lastErr error
	for _, ds := range s.st.all() {
		rec, err := ds.GetRecord(ctx, registry.EnvInstances, id)
		if err != nil {
			lastErr = err
			continue
		}
		var raw struct {
			EnvInstanceView
			EnvProviderType string   `json:"env_provider_type"`
			ControlToken    string   `json:"control_token"`
			MCPServers      []string `json:"mcp_servers"`
		}
		if err := json.Unmarshal(rec.Data, &raw); err != nil {
			return nil, fmt.Errorf("env instance %s: %w", id, err)
		}
		raw.EnvInstanceView.InstanceID = rec.Key
		return &liveInstance{view: raw.EnvInstanceView, providerType: raw.EnvProviderType,
			controlToken: raw.ControlToken, servers: raw.MCPServers}, nil
	}
	return nil, lastErr
}

// gateway is the gwclient of a deployed instance, or why there is none.
func (li *liveInstance) gateway() (*gwclient.Client, string) {
	switch {
	case li.view.Status != "deployed":
		return nil, "The instance is " + li.view.Status + ": its gateway is not read."
	case li.providerType == "server":
		return nil, "The env is deployed with the server topology: it has no gateway (no roles, clock or triggers)."
	case li.view.GatewayURL == "":
		return nil, "The instance record has no gateway URL."
	}
	return gwclient.NewWithControlToken(li.view.GatewayURL, li.controlToken, &http.Client{Timeout: liveTimeout}), ""
}

// envLive reads everything the live env page shows; extraRole adds a
// role to the per-role columns.
func (s *Server) envLive(ctx context.Context, id, extraRole string) (*EnvLive, error) {
	li, err := s.readEnvInstance(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &EnvLive{Instance: li.view, Roles: []RoleTools{}, Tools: []LiveTool{}, Data: []ServerData{}, Control: s.opt.AllowControl}
	gw, note := li.gateway()
	if gw == nil {
		out.Note = note
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()

	var state protocol.StateResponse
	var stateErr error
	var wg sync.WaitGroup
	wg.Go(func() { stateErr = gw.Do(ctx, http.MethodGet, "/state", "", nil, &state) })
	wg.Go(func() {
		var cs protocol.ClockState
		if err := gw.Do(ctx, http.MethodGet, "/clock/state", "", nil, &cs); err != nil {
			out.ClockError = gatewayError("the clock", err)
			return
		}
		out.Clock = &cs
	})
	wg.Go(func() {
		var ts protocol.TriggersState
		if err := gw.Do(ctx, http.MethodGet, "/triggers/state", "", nil, &ts); err != nil {
			out.TriggersError = gatewayError("the triggers", err)
			return
		}
		out.Triggers = &ts
	})
	out.Data = make([]ServerData, len(li.servers))
	for i, name := range li.servers {
		wg.Go(func() { out.Data[i] = serverData(ctx, gw.Server(name), name) })
	}
	wg.Wait()
	if stateErr != nil {
		out.ToolsError = gatewayError("the tools", stateErr)
		if out.ClockError != "" && out.TriggersError != "" {
			out.Note = "The gateway did not answer: " + out.ToolsError
			return out, nil
		}
	}
	out.Reachable = true
	if stateErr == nil {
		out.RoleRules = state.Roles
		out.Roles, out.Tools = roleTools(ctx, gw, &state, out.Triggers, extraRole)
	}
	return out, nil
}

// roleTools lists each role's merged tools and the gateway's tools with
// the roles that see them. The roles shown are the default one, every
// role with rules, the triggers' watched roles and extra.
func roleTools(ctx context.Context, gw *gwclient.Client, st *protocol.StateResponse, ts *protocol.TriggersState, extra string) ([]RoleTools, []LiveTool) {
	names := []string{protocol.DefaultRole}
	for r := range st.Roles {
		names = append(names, r)
	}
	if ts != nil {
		names = append(names, ts.Config.WatchRoles...)
	}
	if extra = strings.TrimSpace(extra); extra != "" {
		names = append(names, extra)
	}
	sort.Strings(names[1:])
	names = slices.Compact(names)
	names = slices.DeleteFunc(names[1:], func(r string) bool { return r == protocol.DefaultRole || r == "" })
	names = append([]string{protocol.DefaultRole}, names...)

	roles := make([]RoleTools, len(names))
	var wg sync.WaitGroup
	for i, r := range names {
		wg.Go(func() {
			roles[i] = RoleTools{Role: r, Tools: []string{}}
			as := r
			if r == protocol.DefaultRole {
				as = ""
			}
			var lt protocol.StepListTools
			if err := gw.Do(ctx, http.MethodPost, "/step", as, map[string]any{"action": "list_tools"}, &lt); err != nil {
				roles[i].Error = gatewayError("the tools of role "+r, err)
				return
			}
			for _, t := range lt.Tools {
				roles[i].Tools = append(roles[i].Tools, t.Name)
			}
		})
	}
	wg.Wait()
	tools := []LiveTool{}
	for _, srv := range st.MCPServers {
		for _, t := range srv.Tools {
			lt := LiveTool{Name: t.Name, Server: srv.Name, Description: t.Description, Enabled: map[string]bool{}}
			for _, r := range roles {
				if r.Error == "" {
					lt.Enabled[r.Role] = slices.Contains(r.Tools, t.Name)
				}
			}
			tools = append(tools, lt)
		}
	}
	return roles, tools
}

// serverData reads one backing server's data plane as a JSON value, so
// the page can show it as a tree.
func serverData(ctx context.Context, c *envclient.Client, name string) ServerData {
	parts, err := c.GetData(ctx, nil)
	if errors.Is(err, &protocol.Error{Code: protocol.CodeMethodNotFound}) {
		return ServerData{Server: name, Error: name + " has no data plane (it does not implement data/get)."}
	}
	if err != nil {
		return ServerData{Server: name, Error: gatewayError("data/get of "+name, err)}
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return ServerData{Server: name, Error: "data/get of " + name + ": " + err.Error()}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return ServerData{Server: name, Error: "data/get of " + name + ": " + err.Error()}
	}
	return ServerData{Server: name, Parts: v}
}

// gatewayError is a panel message for a failed gateway read.
func gatewayError(what string, err error) string {
	var se *gwclient.StatusError
	if errors.As(err, &se) {
		return fmt.Sprintf("Cannot read %s: the gateway answered HTTP %d: %s", what, se.Status, strings.TrimSpace(se.Body))
	}
	var he *envclient.HTTPError
	if errors.As(err, &he) {
		return fmt.Sprintf("Cannot read %s: HTTP %d: %s", what, he.Status, strings.TrimSpace(he.Body))
	}
	return "Cannot read " + what + ": " + err.Error()
}

func (s *Server) apiEnv(c echo.Context) error {
	id := c.QueryParam("id")
	if id == "" {
		return badRequest("id", "required (an env instance id)")
	}
	v, err := s.envLive(c.Request().Context(), id, c.QueryParam("role"))
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, v)
}

// envPage is the live env page's data.
type envPage struct {
	Live *EnvLive
	// Done names the change just made ("tools", "clock"); ActionError the
	// one that failed.
	Done, ActionError string
	Role              string
	// Pages are the plugin pages that view this env.
	Pages []PluginPage
}

func (s *Server) pageEnv(c echo.Context) error {
	return s.renderEnv(c, http.StatusOK, "")
}

func (s *Server) renderEnv(c echo.Context, code int, actionErr string) error {
	id := c.QueryParam("id")
	if id == "" {
		id = c.FormValue("id")
	}
	if id == "" {
		return badRequest("id", "required (an env instance id)")
	}
	role := c.QueryParam("role")
	v, err := s.envLive(c.Request().Context(), id, role)
	if errors.Is(err, registry.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "No env instance "+id+".")
	}
	if err != nil {
		return storeError(err)
	}
	p := &envPage{Live: v, Done: c.QueryParam("done"), ActionError: actionErr, Role: role, Pages: s.pagesFor(v.Instance.EnvID)}
	return s.render(c, code, "env", &page{Title: "Env instance " + id, Nav: "envs", Data: p})
}

// ToolAccessRequest is POST /api/v1/env/tools: what a
// modify_env_tool_access step sends.
type ToolAccessRequest struct {
	ID     string `json:"id"`
	Action string `json:"action"` // "enable" or "disable"
	Role   string `json:"role"`
	// Tools is a list of tool names, or "*".
	Tools json.RawMessage `json:"tools"`
}

// ClockRequest is POST /api/v1/env/clock: what a sync_env_clock step
// sends (set_time of the gateway card's clock extension).
type ClockRequest struct {
	ID          string   `json:"id"`
	VirtualTime string   `json:"virtual_time"`
	Rate        *float64 `json:"virtual_seconds_per_real_second"`
}

// errControlOff is the answer to a write action without --allow-control.
var errControlOff = echo.NewHTTPError(http.StatusForbidden, "changing env instances is off: start the explorer with agent-env up --allow-control")

func (tr *ToolAccessRequest) validate() (any, error) {
	if tr.ID == "" {
		return nil, badRequest("id", "required (an env instance id)")
	}
	if tr.Action != "enable" && tr.Action != "disable" {
		return nil, badRequest("action", `must be "enable" or "disable"`)
	}
	if strings.TrimSpace(tr.Role) == "" {
		return nil, badRequest("role", "required")
	}
	var star string
	if json.Unmarshal(tr.Tools, &star) == nil && star == "*" {
		return "*", nil
	}
	var list []string
	if err := json.Unmarshal(tr.Tools, &list); err != nil || len(list) == 0 || slices.Contains(list, "") {
		return nil, badRequest("tools", `must be a non-empty list of tool names or "*"`)
	}
	return list, nil
}

func (cr *ClockRequest) validate() error {
	if cr.ID == "" {
		return badRequest("id", "required (an env instance id)")
	}
	if strings.TrimSpace(cr.VirtualTime) == "" {
		return badRequest("virtual_time", "required (ISO 8601, such as 2026-03-02T09:00:00Z)")
	}
	if cr.Rate != nil && (*cr.Rate < 0 || *cr.Rate > 86400) {
		return badRequest("virtual_seconds_per_real_second", "must be between 0 and 86400")
	}
	return nil
}

// controlGateway is the gateway of a deployed instance for a write action.
func (s *Server) controlGateway(ctx context.Context, id string) (*gwclient.Client, error) {
	li, err := s.readEnvInstance(ctx, id)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, echo.NewHTTPError(http.StatusNotFound, "id: no env instance "+id)
	}
	if err != nil {
		return nil, storeError(err)
	}
	gw, note := li.gateway()
	if gw == nil {
		return nil, echo.NewHTTPError(http.StatusConflict, note)
	}
	return gw, nil
}

// setToolAccess is the modify_env_tool_access step's call: POST
// /tools/{action} with the role and tools; it returns the gateway's
// snapshot.
func (s *Server) setToolAccess(ctx context.Context, tr *ToolAccessRequest) (any, error) {
	tools, err := tr.validate()
	if err != nil {
		return nil, err
	}
	gw, err := s.controlGateway(ctx, tr.ID)
	if err != nil {
		return nil, err
	}
	var snap any
	if err := gw.Do(ctx, http.MethodPost, "/tools/"+tr.Action, "", map[string]any{"role": tr.Role, "tools": tools}, &snap); err != nil {
		return nil, upstreamError(err)
	}
	s.opt.Logger.Info("env tool access changed", "instance", tr.ID, "action", tr.Action, "role", tr.Role)
	return snap, nil
}

// setClock is the sync_env_clock step's call: the set_time method of the
// clock extension the gateway's card advertises.
func (s *Server) setClock(ctx context.Context, cr *ClockRequest) (json.RawMessage, error) {
	if err := cr.validate(); err != nil {
		return nil, err
	}
	gw, err := s.controlGateway(ctx, cr.ID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	card, err := gw.Card().GetCard(ctx)
	if err != nil {
		return nil, upstreamError(err)
	}
	rate := 1.0
	if cr.Rate != nil {
		rate = *cr.Rate
	}
	st, err := gw.Card().InvokeExtension(ctx, card, protocol.URIClock,
		map[string]any{"virtual_time": cr.VirtualTime, "virtual_seconds_per_real_second": rate}, "set_time")
	if err != nil {
		return nil, upstreamError(err)
	}
	s.opt.Logger.Info("env clock set", "instance", cr.ID, "virtual_time", cr.VirtualTime, "rate", rate)
	return st, nil
}

// upstreamError is a gateway's refusal as a 400 (it named the problem) or
// a failure to reach it as 502.
func upstreamError(err error) error {
	var se *gwclient.StatusError
	if errors.As(err, &se) && se.Status >= 400 && se.Status < 500 {
		return echo.NewHTTPError(http.StatusBadRequest, "the gateway refused: "+strings.TrimSpace(se.Body))
	}
	var he *envclient.HTTPError
	if errors.As(err, &he) && he.Status >= 400 && he.Status < 500 {
		return echo.NewHTTPError(http.StatusBadRequest, "the gateway refused: "+strings.TrimSpace(he.Body))
	}
	if errors.Is(err, envclient.ErrUnknownExtension) || errors.Is(err, envclient.ErrUnknownMethod) {
		return echo.NewHTTPError(http.StatusConflict, "the gateway's card: "+err.Error())
	}
	return echo.NewHTTPError(http.StatusBadGateway, "the gateway did not answer: "+err.Error())
}

// decodeJSONBody decodes a JSON request body strictly.
func decodeJSONBody(c echo.Context, v any) error {
	d := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 1<<20))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "body: "+err.Error())
	}
	return nil
}

func (s *Server) apiEnvTools(c echo.Context) error {
	if !s.opt.AllowControl {
		return errControlOff
	}
	var tr ToolAccessRequest
	if err := decodeJSONBody(c, &tr); err != nil {
		return err
	}
	snap, err := s.setToolAccess(c.Request().Context(), &tr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"snapshot": snap})
}

func (s *Server) apiEnvClock(c echo.Context) error {
	if !s.opt.AllowControl {
		return errControlOff
	}
	var cr ClockRequest
	if err := decodeJSONBody(c, &cr); err != nil {
		return err
	}
	st, err := s.setClock(c.Request().Context(), &cr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"clock": st})
}

// formTools reads the tools form field: "*", or names separated by
// commas or spaces.
func formTools(v string) json.RawMessage {
	v = strings.TrimSpace(v)
	if v == "*" {
		return json.RawMessage(`"*"`)
	}
	list := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	b, _ := json.Marshal(list)
	return b
}

// postEnvForm runs a page form's action; success redirects back to the
// env page (303), a refusal renders it with the message.
func (s *Server) postEnvForm(c echo.Context, do func(ctx context.Context) error, done string) error {
	if !s.opt.AllowControl {
		return errControlOff
	}
	id := c.FormValue("id")
	if err := do(c.Request().Context()); err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) && id != "" && he.Code != http.StatusNotFound {
			msg, _ := he.Message.(string)
			return s.renderEnv(c, he.Code, msg)
		}
		return err
	}
	u := "/env?id=" + url.QueryEscape(id) + "&done=" + done
	if r := c.FormValue("view_role"); r != "" {
		u += "&role=" + url.QueryEscape(r)
	}
	return c.Redirect(http.StatusSeeOther, u)
}

func (s *Server) formEnvTools(c echo.Context) error {
	tr := &ToolAccessRequest{ID: c.FormValue("id"), Action: c.FormValue("action"), Role: c.FormValue("role"), Tools: formTools(c.FormValue("tools"))}
	return s.postEnvForm(c, func(ctx context.Context) error { _, err := s.setToolAccess(ctx, tr); return err }, "tools")
}

func (s *Server) formEnvClock(c echo.Context) error {
	cr := &ClockRequest{ID: c.FormValue("id"), VirtualTime: c.FormValue("virtual_time")}
	if r := strings.TrimSpace(c.FormValue("rate")); r != "" {
		f, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return s.renderEnv(c, http.StatusBadRequest, "virtual_seconds_per_real_second: not a number")
		}
		cr.Rate = &f
	}
	return s.postEnvForm(c, func(ctx context.Context) error { _, err := s.setClock(ctx, cr); return err }, "clock")
}
