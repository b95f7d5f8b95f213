package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in the data dir that a running stack holds an exclusive flock on.
const LockFile = "stack.lock"

// lockDataDir takes the data dir for this stack: two stacks on one dir would run two Redis
// servers on one append-only file and two sets of runners on one task folder. The kernel drops
// the lock when the process dies, however it dies, so a crashed stack never blocks the next one.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		raw, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(raw))); perr == nil {
				holder = "pid " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("the data dir %s is in use by another lensfn-local stack (%s): stop it first, or start this one with another data dir", dir, holder)
		}
		return nil, fmt.Errorf("lock the data dir %s: %w", dir, err)
	}
	// The pid is for the message a second stack shows; a failed write is still this stack's
	// error, not something to start without.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("record this stack's pid in %s: %w", path, err)
	}
	return f, nil
}
