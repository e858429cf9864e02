package fsobject

import "syscall"

// syscallENOTDIR: a key whose parent is an object ("a/b" when "a" is a
// file) is simply absent.
const syscallENOTDIR = syscall.ENOTDIR
