//go:build !unix

package process

import "os/exec"

func setGroup(*exec.Cmd)   {}
func killGroup(pid int)    {}
func groupAlive(int) bool  { return false }
