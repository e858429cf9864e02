package procid

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Owner identifies a process.
type Owner struct {
	PID int `json:"pid"`
	// Start is the process's start time in clock ticks since boot ("" where
	// /proc is missing).
	Start string `json:"start,omitempty"`
	// Boot is the kernel's boot id.
	Boot string `json:"boot_id,omitempty"`
	// Host is the hostname, plus "/<machine id>" when the machine has one.
	Host string `json:"host,omitempty"`
}

// Self is the current process.
func Self() Owner {
	pid := os.Getpid()
	return Owner{PID: pid, Start: startTicks(pid), Boot: bootID(), Host: Host()}
}

// Host names this machine: the hostname plus "/<machine id>" when
// /etc/machine-id exists.
func Host() string {
	h, _ := os.Hostname()
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			h += "/" + id
		}
	}
	return h
}

// Gone reports whether o's process has certainly ended. It is false for an
// owner of another host or one without a start time: nothing can be known
// of those from here.
func (o Owner) Gone() bool {
	if o.PID <= 0 || o.Start == "" || o.Boot == "" || o.Host == "" || o.Host != Host() {
		return false
	}
	boot := bootID()
	if boot == "" {
		return false
	}
	if boot != o.Boot {
		return true // this host rebooted since
	}
	if o.PID == os.Getpid() {
		return startTicks(o.PID) != o.Start
	}
	if !pidRuns(o.PID) {
		return true
	}
	st := startTicks(o.PID)
	return st != "" && st != o.Start // another process under a reused pid
}

func pidRuns(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// startTicks reads field 22 (starttime) of /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may hold spaces, so fields are
// counted from the last ')'.
func startTicks(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	const startField = 22 - 3 // fields after ')' begin at field 3 (state)
	if len(f) <= startField {
		return ""
	}
	return f[startField]
}
