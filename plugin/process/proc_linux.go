package process

import "syscall"

// setParentDeathSignal has Linux kill the plugin if agent-env itself dies
// without running its cleanup (SIGKILL, a crash), so no plugin outlives
// the run even then.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
