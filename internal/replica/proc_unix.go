//go:build unix && !linux

package replica

import "syscall"

// sysProcAttr puts the sidecar in its own process group. Outside Linux there
// is no parent-death signal: if Munin is killed with -9 the sidecar lives on
// until stopped by hand (it only replicates; it cannot acknowledge writes).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
