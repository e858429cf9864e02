//go:build unix

package process

import (
	"os/exec"
	"syscall"
)

// setGroup puts the plugin in its own process group, so that killing the
// group also ends what the plugin started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// groupAlive reports whether any process of the group still exists.
func groupAlive(pid int) bool { return syscall.Kill(-pid, 0) == nil }
