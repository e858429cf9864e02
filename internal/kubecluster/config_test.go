package kubecluster

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// The containerd configuration parses, keeps every path under the
// cluster's folder and carries the settings these hosts need.
func TestContainerdConfig(t *testing.T) {
	dir := "/tmp/agentenv-kube-1/containerd"
	raw := containerdConfig(dir, dir+"/containerd.sock", dir+"/runc", "127.0.0.1:4000/pause:v1", []string{"127.0.0.1:4000", "localhost:5000"})
	var cfg struct {
		Version int
		Root    string
		State   string
		GRPC    struct{ Address string } `toml:"grpc"`
		Plugins map[string]map[string]any
	}
	if err := toml.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if cfg.Version != 2 {
		t.Errorf("version %d", cfg.Version)
	}
	for what, p := range map[string]string{"root": cfg.Root, "state": cfg.State, "grpc.address": cfg.GRPC.Address} {
		if !strings.HasPrefix(p, dir+"/") {
			t.Errorf("%s %q is not under %s", what, p, dir)
		}
	}
	cri := cfg.Plugins["io.containerd.grpc.v1.cri"]
	if cri["sandbox_image"] != "127.0.0.1:4000/pause:v1" || cri["restrict_oom_score_adj"] != true || cri["stream_server_address"] != "127.0.0.1" {
		t.Errorf("cri plugin %v", cri)
	}
	runc := cri["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"].(map[string]any)
	opts := runc["options"].(map[string]any)
	if runc["runtime_type"] != "io.containerd.runc.v2" || opts["Root"] != dir+"/runc" || opts["SystemdCgroup"] != false {
		t.Errorf("runc runtime %v", runc)
	}
	cni := cri["cni"].(map[string]any)
	for _, k := range []string{"bin_dir", "conf_dir"} {
		if p, _ := cni[k].(string); !strings.HasPrefix(p, dir+"/") {
			t.Errorf("cni %s %q is not under %s", k, p, dir)
		}
	}
	mirrors := cri["registry"].(map[string]any)["mirrors"].(map[string]any)
	for _, r := range []string{"127.0.0.1:4000", "localhost:5000"} {
		m, _ := mirrors[r].(map[string]any)
		if eps, _ := m["endpoint"].([]any); len(eps) != 1 || eps[0] != "http://"+r {
			t.Errorf("mirror %s: %v", r, m)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b/c\134d`); got != `/tmp/a b/c\d` {
		t.Errorf("got %q", got)
	}
	if got := unescapeMount("/plain"); got != "/plain" {
		t.Errorf("got %q", got)
	}
}
