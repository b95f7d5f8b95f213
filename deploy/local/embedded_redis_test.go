package local

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// Without redis-server on PATH the stack's embedded store has the data dir's password like the
// real one: a connection that does not AUTH is refused, the functions' URL carries it, and
// neither the URL nor the password is logged.
func TestEmbeddedStoreNeedsThePassword(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server here
	var logs strings.Builder
	s := &Stack{opts: Options{DataDir: t.TempDir(), Log: func(f string, a ...any) { fmt.Fprintf(&logs, f+"\n", a...) }}}
	if err := s.startRedis(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stopRedis)
	raw, err := os.ReadFile(filepath.Join(s.opts.DataDir, "redis.password"))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(raw))
	if password == "" || !strings.Contains(s.RedisURL, ":"+password+"@") || strings.Contains(logs.String(), password) ||
		!strings.Contains(logs.String(), "embedded") {
		t.Fatalf("url %q, logs %q", s.RedisURL, logs.String())
	}
	conn, err := net.DialTimeout("tcp", s.RedisAddr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n") // miniredis reads only RESP arrays
	if line, _ := bufio.NewReader(conn).ReadString('\n'); !strings.HasPrefix(line, "-NOAUTH") {
		t.Fatalf("PING without the password answered %q", line)
	}
	store, err := redisstore.Open(context.Background(), s.RedisURL, redisstore.Options{})
	if err != nil {
		t.Fatalf("the functions' URL does not open the store: %v", err)
	}
	store.Close()
}
