package runner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/process"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// benchTask: the email env, a trainer-played agent and benchTurns prompts
// in a chain, each answered after one tool call.
const benchTurns = 5

func benchTask() string {
	js := `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
 {"id":"agent","type":"deploy_agent","env_ids":["email"],"a2a_agent_id":"scripted","role":"assistant"}`
	for i := range benchTurns {
		js += fmt.Sprintf(`,
 {"id":"p%d","type":"prompt_agent","prompt_id":"p%d","prompt":"List the inbox.","poll_interval_seconds":0.01}`, i, i)
	}
	return js + "]"
}

// benchFixture is envsteptest.New for a benchmark: fresh stores with the
// email env, the gateway and the scripted agent on the process sandbox.
func benchFixture(b *testing.B) (*runner.Runner, *runner.Services) {
	bins := envsteptest.Build(b)
	dir := b.TempDir()
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		b.Fatal(err)
	}
	arts := artifact.New(docs, objs, nil)
	st := envdeploy.Stores{Docs: docs, Artifacts: arts, Images: localimage.New(nil)}
	put := &envdeploy.Putter{Stores: st, TempDir: b.TempDir()}
	if _, err := put.PutGateway(ctx, envdeploy.DefaultGatewayID, envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		b.Fatal(err)
	}
	if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "email", EnvironmentName: "email",
		Image: envdeploy.ImageInput{Binary: bins.Email}}); err != nil {
		b.Fatal(err)
	}
	if _, err := put.PutAgent(ctx, envdeploy.AgentInput{ID: "scripted", Image: envdeploy.ImageInput{Binary: bins.Agent}}); err != nil {
		b.Fatal(err)
	}
	pb := process.New(filepath.Join(dir, "proc"), nil)
	b.Cleanup(func() { _ = pb.Close() })
	dep := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": pb}, DefaultSandbox: "process",
		AgentSandbox: "process", ReadyTimeout: 300 * time.Second}
	return runner.New(&runner.Options{Steps: steps.Builtin()}),
		&runner.Services{Documents: docs, Objects: objs, Artifacts: arts, Deployer: dep}
}

// BenchmarkEpisodes measures start-to-first-turn latency (Start until
// NextTurn returns the first turn: the env, gateway and in-process agent
// deployed and configured) and turns per second once playing (all turns
// of all episodes over the span from the first turn to the last End) at
// 1, 16 and 64 concurrent episodes on the process sandbox.
func BenchmarkEpisodes(b *testing.B) {
	r, svc := benchFixture(b)
	task, err := r.ParseTask("bench", 1, []byte(benchTask()))
	if err != nil {
		b.Fatal(err)
	}
	spec, err := r.NewEpisodeSpec(task, svc, &runner.EpisodeOptions{Context: onProcess})
	if err != nil {
		b.Fatal(err)
	}
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("concurrent=%d", conc), func(b *testing.B) {
			var lat []time.Duration
			var turns int
			var play time.Duration
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				start := time.Now()
				eps, err := spec.StartGroup(ctx, conc)
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				var mu sync.Mutex
				var first, last time.Time
				var wg sync.WaitGroup
				for _, ep := range eps {
					wg.Go(func() {
						n := 0
						for {
							turn, err := ep.NextTurn(ctx)
							if err != nil {
								b.Error(err)
								return
							}
							if turn == nil {
								break
							}
							now := time.Now()
							if n == 0 {
								mu.Lock()
								lat = append(lat, now.Sub(start))
								if first.IsZero() || now.Before(first) {
									first = now
								}
								mu.Unlock()
							}
							tools, err := turn.Tools(ctx)
							if err == nil {
								_, err = tools.CallTool(ctx, "email_list_messages", []byte(`{"folder":"inbox"}`))
							}
							if err == nil {
								err = turn.End(ctx, "done")
							}
							if err != nil {
								b.Error(err)
								return
							}
							n++
							end := time.Now()
							mu.Lock()
							turns++
							if end.After(last) {
								last = end
							}
							mu.Unlock()
						}
						res, err := ep.Result(ctx)
						if err != nil || res.Status != runner.StatusCompleted {
							b.Errorf("episode: %v %+v", err, res)
						}
					})
				}
				wg.Wait()
				play += last.Sub(first)
				cancel()
			}
			slices.Sort(lat)
			if len(lat) == 0 || play <= 0 {
				return
			}
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "ms-first-turn-p50")
			b.ReportMetric(float64(lat[len(lat)*9/10].Milliseconds()), "ms-first-turn-p90")
			b.ReportMetric(float64(turns)/play.Seconds(), "turns/s")
		})
	}
}
