// Package procid names a process so that a later process can tell whether
// it is still running: its pid plus what survives pid reuse (the process's
// start time in clock ticks since boot, from /proc/<pid>/stat) and where it
// ran (the boot id and the host: hostname plus /etc/machine-id).
//
// A run or a sandbox records Self() as its owner; `agent-env` later asks
// Gone() to mark abandoned runs and to prune orphaned sandboxes. Gone is
// conservative: it says true only for an owner of this very host whose
// process has certainly ended (no process with that pid, one that started
// at another time, or a host that rebooted since). An owner of another
// host, or one recorded without a start time (other systems, old records),
// is never gone.
//
//	owner := procid.Self()
//	...
//	if owner.Gone() { /* mark abandoned */ }
package procid
