package envconformance_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envconformance"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/examples/envs/email"
	"github.com/agentenv/agentenv/protocol"
)

func noEnv(string) string { return "" }

func TestEnvsdkServers(t *testing.T) {
	full := envsdk.New(&protocol.EnvCard{Name: "full"}, &envsdk.Options{Getenv: noEnv})
	full.HandleReset(func(context.Context) error { return nil })
	full.HandleAdd(func(context.Context, []protocol.Part) error { return nil })
	full.HandleGet(func(context.Context) ([]protocol.Part, error) { return nil, nil })
	full.EnableClock()

	toolsOnly := envsdk.New(&protocol.EnvCard{Name: "tools"}, &envsdk.Options{Getenv: noEnv})
	envsdk.AddTool(toolsOnly, &envsdk.Tool{Name: "t"}, func(context.Context, *envsdk.Request, struct{}) (string, error) { return "", nil })

	resetOnly := envsdk.New(&protocol.EnvCard{Name: "reset"}, &envsdk.Options{Getenv: noEnv})
	resetOnly.HandleReset(func(context.Context) error { return nil })

	mail, _ := email.New(&envsdk.Options{Getenv: noEnv})

	for name, s := range map[string]*envsdk.Server{"full": full, "tools only": toolsOnly, "reset only": resetOnly, "email": mail} {
		t.Run(name, func(t *testing.T) {
			env := envsdktest.Start(t, s)
			envconformance.Run(t, env.BaseURL)
		})
	}
}

// The suite fails a server that breaks the rules.
func TestCheckFindsProblems(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-env.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"bad","url":"/agentenv","capabilities":{"operations":["data/get","data/reset"]}}`))
	})
	mux.HandleFunc("/agentenv", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400) // errors as HTTP statuses, the classic mistake
		_, _ = w.Write([]byte(`{"error":"bad"}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	problems := strings.Join(envconformance.Check(srv.URL), "\n")
	for _, want := range []string{
		`card key "protocolVersion" missing`,
		`card key "children_environments" missing`,
		"capabilities.extensions missing",
		"capabilities.operations [data/get data/reset]: want a subset",
		"not JSON: status 400",
		"data/add probe: status 400",
		"GET data plane: 400, want 405",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("missing problem %q in:\n%s", want, problems)
		}
	}
}
