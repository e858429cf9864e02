package explorer

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
)

// EnvInstanceView is one env instance record, as the envs page lists it.
// The control token is never read into it.
type EnvInstanceView struct {
	InstanceID string `json:"instance_id"`
	EnvID      string `json:"env_id"`
	EnvVersion int    `json:"env_version"`
	Status     string `json:"status"`
	GatewayURL string `json:"gateway_url,omitempty"`
	MCPURL     string `json:"mcp_url,omitempty"`
	SandboxID  string `json:"sandbox_id,omitempty"`
	CreatedAt  string `json:"created_at_utc,omitempty"`
}

var envFields = []string{"instance_id", "env_id", "env_version", "status", "gateway_url", "mcp_url", "sandbox_id", "created_at_utc"}

// EnvsPage is a page of env instances, newest first.
type EnvsPage struct {
	Instances []EnvInstanceView `json:"instances"`
	Next      string            `json:"next,omitempty"`
}

func (s *Server) envInstances(ctx context.Context, status, after string) (*EnvsPage, error) {
	where := map[string]string{}
	if status != "" {
		where["status"] = status
	}
	p, err := registry.PageRecords(ctx, s.st.all()[0], registry.EnvInstances, &registry.PageQuery{Where: where, Fields: envFields, After: after, Limit: 100})
	if err != nil {
		return nil, err
	}
	out := &EnvsPage{Instances: []EnvInstanceView{}, Next: p.Next}
	for _, r := range p.Records {
		v := EnvInstanceView{InstanceID: r.Key}
		_ = json.Unmarshal(r.Data, &v)
		v.InstanceID = r.Key
		out.Instances = append(out.Instances, v)
	}
	return out, nil
}

func (s *Server) apiEnvs(c echo.Context) error {
	p, err := s.envInstances(c.Request().Context(), c.QueryParam("status"), c.QueryParam("after"))
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, p)
}

func (s *Server) pageEnvs(c echo.Context) error {
	v := struct {
		Page *EnvsPage
		Err  string
	}{}
	var err error
	if v.Page, err = s.envInstances(c.Request().Context(), c.QueryParam("status"), c.QueryParam("after")); err != nil {
		v.Err = panelError("the env instances", err)
	}
	return s.render(c, http.StatusOK, "envs", &page{Title: "Env instances", Nav: "envs", Data: v})
}
