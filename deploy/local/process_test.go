package local

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A function whose free port another process took before it bound it is restarted on a new one
// (a restart on the same port would fail for as long as the other process holds it).
func TestAProcessThatLostItsPortMovesToAFreeOne(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	// The "function": fails as a Go server does when its port is taken, else serves until killed.
	bin := filepath.Join(dir, "fn.sh")
	script := "#!/bin/sh\nif [ \"$PORT\" = \"" + strconv.Itoa(takenPort) + "\" ]; then echo \"listen tcp 127.0.0.1:$PORT: bind: address already in use\"; exit 1; fi\nexec sleep 30\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	moved := make(chan int, 1)
	p := &process{name: "fn", bin: bin, env: map[string]string{"PORT": strconv.Itoa(takenPort)}, port: takenPort,
		logPath: filepath.Join(dir, "fn.log"), movable: true, onMove: func(port int) { moved <- port }, log: t.Logf}
	p.supervise()
	defer p.stop(5 * time.Second)
	select {
	case port := <-moved:
		if port == takenPort || p.url() != "http://127.0.0.1:"+strconv.Itoa(port) {
			t.Fatalf("moved to %d, url %s (taken %d)", port, p.url(), takenPort)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the process was not moved off its taken port")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.running() {
		if time.Now().After(deadline) {
			t.Fatal("the process did not run on its new port")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
