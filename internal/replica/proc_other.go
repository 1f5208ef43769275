//go:build !unix

package replica

import "syscall"

// sysProcAttr has nothing to set outside Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }
