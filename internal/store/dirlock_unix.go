//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

var errLocked = syscall.EWOULDBLOCK

// lockFileExclusive takes an exclusive flock without waiting; errLocked
// means another open file holds it.
func lockFileExclusive(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EAGAIN) {
		return errLocked
	}
	return err
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
