//go:build !unix

package process

import (
	"os"
	"os/exec"
)

// Without process groups only the plugin itself can be killed.
func setGroup(*exec.Cmd) {}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func groupAlive(int) bool { return false }
