package local

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDataDirIsHeldByOneStack: a second lock on a held data dir is refused with an error naming
// the holder's pid; once released, the dir can be taken again.
func TestDataDirIsHeldByOneStack(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if err == nil || !strings.Contains(err.Error(), "in use by another lensfn-local stack") ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock: %v", err)
	}
	first.Close()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
	again.Close()
}
