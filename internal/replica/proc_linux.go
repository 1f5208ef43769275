//go:build linux

package replica

import "syscall"

// sysProcAttr puts the sidecar in its own process group (a Ctrl-C on Munin's
// terminal must not reach it before Munin has synced and unregistered its
// workspaces) and has the kernel SIGKILL it when the thread that started it
// dies — so a kill -9 of Munin never leaves an orphaned replicator behind.
// Pdeathsig is tied to the spawning OS thread; the supervisor goroutine locks
// its thread for as long as it runs (see supervise).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
