//go:build unix && !linux

package process

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
