package redistest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

// outcomeTB records how StartServer ended the test instead of ending this one.
type outcomeTB struct {
	testing.TB
	skipped string
	fatal   string
}

func (o *outcomeTB) Skip(args ...any) { o.end(&o.skipped, fmt.Sprint(args...)) }
func (o *outcomeTB) Skipf(format string, args ...any) {
	o.end(&o.skipped, fmt.Sprintf(format, args...))
}
func (o *outcomeTB) Fatal(args ...any)                 { o.end(&o.fatal, fmt.Sprint(args...)) }
func (o *outcomeTB) Fatalf(format string, args ...any) { o.end(&o.fatal, fmt.Sprintf(format, args...)) }

// end records why the test ended and ends StartServer's goroutine, as the real ones do.
func (o *outcomeTB) end(dst *string, why string) {
	*dst = why // read after StartServer's goroutine ended
	runtime.Goexit()
}

// startWith runs StartServer in its own goroutine (Skip and Fatal end it) with the fake
// redis-server script alone on PATH (shell builtins only).
func startWith(t *testing.T, script string) *outcomeTB {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "redis-server"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	o := &outcomeTB{TB: t}
	files := redistest.NewTLSFiles(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.StartServer(o, redistest.ServerOptions{TLS: &files})
	}()
	<-done
	return o
}

// A redis-server built without TLS skips the test with the reason; one that fails at start for
// another reason fails it.
func TestStartServerSkipsOnlyWithoutTLS(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake redis-server is a shell script")
	}
	noTLS := startWith(t, `echo "*** FATAL CONFIG FILE ERROR (Redis 6.0.16) ***" >&2
echo "Reading the configuration file, at line 2" >&2
echo ">>> 'tls-port \"6380\"'" >&2
echo "Bad directive or wrong number of arguments" >&2
exit 1
`)
	if !strings.Contains(noTLS.skipped, "cannot serve TLS: it does not know the tls-* settings") || noTLS.fatal != "" {
		t.Errorf("a redis-server without TLS: skipped %q, failed %q; want a skip saying why", noTLS.skipped, noTLS.fatal)
	}
	broken := startWith(t, `echo "Failed to configure TLS. Check logs for more info." >&2; exit 1`)
	if broken.skipped != "" || !strings.Contains(broken.fatal, "Failed to configure TLS") {
		t.Errorf("a redis-server failing to load its certificate: skipped %q, failed %q; want a failure with its log", broken.skipped, broken.fatal)
	}
}
