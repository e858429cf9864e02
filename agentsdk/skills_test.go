package agentsdk_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type skillAgent struct {
	installs atomic.Int32
	gate     chan struct{}
}

func (a *skillAgent) InstallSkill(ctx context.Context, s agentsdk.RegisteredSkill) error {
	a.installs.Add(1)
	if a.gate != nil {
		<-a.gate
	}
	return nil
}

func (a *skillAgent) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	var names []string
	for _, s := range t.Skills {
		names = append(names, s.Name+":"+s.SkillMD)
	}
	return agentsdk.Text(strings.Join(names, ",")), nil
}

func TestSkillConfig(t *testing.T) {
	ag := &skillAgent{gate: make(chan struct{})}
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "skilled", Skills: []agentsdk.Skill{{ID: "core", Name: "core", Description: "Built in"}}},
		&agentsdk.Options{Agent: ag, Logger: quiet()})
	add := map[string]any{"name": "pdf", "description": "Read PDFs", "skill_md": "# PDF"}
	// Concurrent duplicates: one install, one 409.
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, _ := a.Client.Ext(context.Background(), "POST", protocol.AgentSkillConfigPath, add)
			statuses <- st
		}()
	}
	ag.gate <- struct{}{}
	close(ag.gate) // a second install (a bug) would not block, and is counted
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if got[200] != 1 || got[409] != 1 || ag.installs.Load() != 1 {
		t.Fatalf("statuses %v installs %d", got, ag.installs.Load())
	}
	for body, want := range map[string]int{
		`{"name":"core","description":"d","skill_md":"x"}`:                             409,
		`{"name":"-bad","description":"d","skill_md":"x"}`:                             400,
		`{"name":"ok","description":"d"}`:                                              400,
		`{"name":"ok","description":"d","skill_bundle":{"files":[]}}`:                  400,
		`{"name":"ok","description":"d","skill_md":"x","extra":1}`:                     400,
		`{"name":"` + strings.Repeat("a", 129) + `","description":"d","skill_md":"x"}`: 400,
	} {
		if st, resp := ext(t, a, "POST", protocol.AgentSkillConfigPath, body); st != want {
			t.Errorf("%s: %d %s, want %d", body, st, resp, want)
		}
	}
	if st, body := ext(t, a, "GET", protocol.AgentSkillConfigPath, nil); st != 200 || !sameJSON([]byte(body), `{"skills":{"core":{"description":"Built in"},"pdf":{"description":"Read PDFs"}}}`) {
		t.Fatalf("list: %d %s", st, body)
	}
	card := getJSON(t, a.URL+protocol.AgentCardPath)
	if !sameJSON(mustJSON(card["skills"]), `[{"id":"core","name":"core","description":"Built in","tags":[]},{"id":"skill-pdf","name":"pdf","description":"Read PDFs","tags":["skill"]}]`) {
		t.Fatalf("card skills = %v", card["skills"])
	}
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	if err != nil || task.Text() != "pdf:# PDF" {
		t.Fatalf("task skills: %+v %v", task, err)
	}
}
