//go:build unix

package local

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills a process group; it is a no-op when the group is gone.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// killMarked kills processes whose environment carries
// AGENTENV_SANDBOX=<id>, catching children that left the process group
// (setsid, nohup). It reads /proc and does nothing where there is none.
func killMarked(id string) {
	marker := []byte(EnvMarker + "=" + id + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// openNonblock keeps an open of a FIFO from waiting for a writer.
const openNonblock = syscall.O_NONBLOCK
