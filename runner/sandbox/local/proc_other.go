//go:build !unix

package local

import "os/exec"

func setGroup(*exec.Cmd) {}
func killGroup(int)      {}
func killMarked(string)  {}

const openNonblock = 0
