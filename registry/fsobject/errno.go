package fsobject

import "syscall"

// syscallENOTDIR: a key whose parent is an object ("a/b" when "a" is a
// file) is simply absent.
const syscallENOTDIR = syscall.ENOTDIR

// syscallONOFOLLOW makes opening a final-component symlink fail, even one
// planted between the lstat and the open.
const syscallONOFOLLOW = syscall.O_NOFOLLOW
