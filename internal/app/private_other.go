//go:build !unix

package app

// PrivateFiles is a no-op where there is no umask; see private_unix.go.
func PrivateFiles() int { return 0 }
