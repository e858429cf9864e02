package envsteptest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// BenchmarkQ3Email runs k concurrent q3-email episodes (deploy the env,
// load the inbox, deploy the scripted agent, prompt, verify, tear down)
// on the process sandbox and reports episodes per second and the peak
// resident memory of this process and every workload it started.
func BenchmarkQ3Email(b *testing.B) {
	for _, k := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			f := envsteptest.NewB(b)
			ctx := context.Background()
			bd, err := bundle.Locate("q3-email", bundles.FS())
			if err != nil {
				b.Fatal(err)
			}
			m, err := bundle.Materialise(ctx, bd, bundle.Stores{Documents: f.Services.Documents, Artifacts: f.Services.Artifacts,
				LockDir: b.TempDir()}, f.Runner.Steps(), io.Discard, nil)
			if err != nil {
				b.Fatal(err)
			}
			task := m.Tasks[0].Task
			peak := startRSSSampler()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				errs := make([]error, k)
				for j := 0; j < k; j++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rc := runner.NewRunContext(nil, f.Services)
						_, err := f.Runner.Run(ctx, task, rc, nil)
						if err == nil {
							if v, verr := rc.Verification("sent_reply"); verr != nil || v.Score != 1 {
								err = fmt.Errorf("score %v %v", v.Score, verr)
							}
						}
						_, _ = f.Runner.TeardownRun(ctx, rc, 0)
						errs[j] = err
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(k*b.N)/elapsed.Seconds(), "episodes/s")
			b.ReportMetric(float64(peak())/(1<<20), "peak-MiB")
		})
	}
}

// startRSSSampler samples, every 50 ms, the summed VmRSS of this process
// and all its descendants; the returned func stops it and gives the peak
// in bytes.
func startRSSSampler() func() int64 {
	var mu sync.Mutex
	var peak int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			if n := treeRSS(os.Getpid()); n > 0 {
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func treeRSS(root int) int64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*/status")
	parent := map[int]int{}
	rss := map[int]int64{}
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "PPid:":
				parent[pid], _ = strconv.Atoi(f[1])
			case "VmRSS:":
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				rss[pid] = kb * 1024
			}
		}
	}
	var sum int64
	for pid, r := range rss {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				sum += r
				break
			}
		}
	}
	return sum
}
