//go:build unix

package app

import "syscall"

// PrivateFiles makes every file and directory this process creates private
// to the user running it (umask 077): the data files hold the team's memory,
// the key hashes and the audit log, and a backup or export holds the same.
// SQLite would otherwise create them world-readable (0644). It returns the
// previous umask.
func PrivateFiles() int { return syscall.Umask(0o077) }
