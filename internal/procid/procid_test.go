package procid_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/agentenv/agentenv/internal/procid"
)

func TestGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc")
	}
	self := procid.Self()
	if self.PID != os.Getpid() || self.Start == "" || self.Boot == "" || self.Host == "" {
		t.Fatalf("Self() = %+v", self)
	}
	if self.Gone() {
		t.Error("this process is gone")
	}
	// A real child that ended and was reaped.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := self
	child.PID = cmd.Process.Pid
	_ = cmd.Wait()
	if !child.Gone() {
		t.Errorf("an ended child (%+v) is not gone", child)
	}
	cases := map[string]procid.Owner{
		"pid reused":    {PID: self.PID, Start: self.Start + "0", Boot: self.Boot, Host: self.Host},
		"host rebooted": {PID: self.PID, Start: self.Start, Boot: "another-boot", Host: self.Host},
	}
	for name, o := range cases {
		if !o.Gone() {
			t.Errorf("%s: %+v not gone", name, o)
		}
	}
	never := map[string]procid.Owner{
		"another host":  {PID: 999999999, Start: "1", Boot: self.Boot, Host: "elsewhere"},
		"no start time": {PID: 999999999, Boot: self.Boot, Host: self.Host},
		"no pid":        {Start: "1", Boot: self.Boot, Host: self.Host},
	}
	for name, o := range never {
		if o.Gone() {
			t.Errorf("%s: %+v counted as gone", name, o)
		}
	}
}
