package redisstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
	"github.com/lensfn/lensfn/runtime/state/statetest"
)

// These tests run the store over TLS (rediss://) against a real redis-server with a CA made for
// the test; they are skipped where redis-server is missing or built without TLS.

const tlsPassword = "tls-pa55word-7f3c"

// startTLSServer starts a TLS-only redis-server requiring tlsPassword, with its certificate
// files.
func startTLSServer(t *testing.T) (*redistest.Server, redistest.TLSFiles) {
	t.Helper()
	files := redistest.NewTLSFiles(t)
	server := redistest.StartServer(t, redistest.ServerOptions{Password: tlsPassword, TLS: &files})
	if !strings.HasPrefix(server.URL(), "rediss://") {
		t.Fatalf("URL %q is not rediss://", server.URL())
	}
	return server, files
}

// noPassword fails the test when err repeats the password (or any part of it).
func noPassword(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), tlsPassword[:8]) {
		t.Errorf("%s: the error repeats the password: %v", what, err)
	}
}

// The whole conformance suite passes over TLS with a password, the private CA given as TLSCAFile.
func TestConformanceOverTLS(t *testing.T) {
	server, files := startTLSServer(t)
	statetest.Run(t, func(t *testing.T) state.Store {
		s, err := redisstore.Open(context.Background(), server.URL(), redisstore.Options{Prefix: uniquePrefix(), TLSCAFile: files.CA})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// A server whose certificate was not signed by the CA the store was given (nor by a system root)
// is refused at Open with an error that says so and does not repeat the password; a CA file that
// is missing, holds no certificate, or comes with a redis:// URL is refused as bad input.
func TestTLSRefusesAnUntrustedServer(t *testing.T) {
	server, _ := startTLSServer(t)
	ctx := context.Background()
	otherCA := redistest.NewTLSFiles(t).CA
	for name, opts := range map[string]redisstore.Options{
		"another CA":       {TLSCAFile: otherCA},
		"the system roots": {},
	} {
		s, err := redisstore.Open(ctx, server.URL(), opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: a server certificate it did not sign was accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "TLS certificate of Redis at "+server.Addr()+" is not trusted") ||
			!strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
			t.Errorf("%s: %v, want an error saying the certificate is not trusted and why", name, err)
		}
		if errors.Is(err, state.ErrUnavailable) {
			t.Errorf("%s: %v is ErrUnavailable: an untrusted server is not an outage", name, err)
		}
		noPassword(t, name, err)
	}

	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plainURL := strings.Replace(server.URL(), "rediss://", "redis://", 1)
	for name, tc := range map[string]struct {
		url, caFile, want string
	}{
		"missing CA file":     {server.URL(), filepath.Join(t.TempDir(), "nope.pem"), "reading the TLS CA file"},
		"CA file without PEM": {server.URL(), empty, "holds no PEM certificate"},
		"CA file, redis://":   {plainURL, otherCA, "does not use TLS (use rediss://)"},
	} {
		_, err := redisstore.Open(ctx, tc.url, redisstore.Options{TLSCAFile: tc.caFile})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
		noPassword(t, name, err)
	}
}

// The URL's password is sent over TLS: without it the server refuses the store, with it every
// operation works; no error, refused login or outage, repeats it.
func TestTLSUsesTheURLPasswordAndNeverShowsIt(t *testing.T) {
	server, files := startTLSServer(t)
	ctx := context.Background()
	opts := redisstore.Options{Prefix: uniquePrefix(), TLSCAFile: files.CA}

	withoutPassword := "rediss://" + server.Addr() + "/0"
	if _, err := redisstore.Open(ctx, withoutPassword, opts); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("no password: %v, want the server's NOAUTH refusal", err)
	}
	wrong := "rediss://:wr0ng-" + tlsPassword + "@" + server.Addr() + "/0"
	_, err := redisstore.Open(ctx, wrong, opts)
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("a wrong password: %v, want the server's WRONGPASS refusal", err)
	}
	noPassword(t, "a wrong password", err)
	if err != nil && strings.Contains(err.Error(), "wr0ng") {
		t.Errorf("a wrong password: the error repeats it: %v", err)
	}

	s, err := redisstore.Open(ctx, server.URL(), opts)
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	defer s.Close()
	if n, err := s.Incr(ctx, "n"); err != nil || n != 1 {
		t.Fatalf("Incr over TLS: %d, %v", n, err)
	}
	server.Stop()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = s.Incr(short, "n")
	if !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Incr with the TLS server stopped: %v, want ErrUnavailable", err)
	}
	noPassword(t, "the server stopped", err)
	_, err = redisstore.Open(short, server.URL(), opts)
	if err == nil {
		t.Error("Open succeeds with the TLS server stopped")
	}
	noPassword(t, "Open with the server stopped", err)
}

// Over TLS the pool checks an idle connection's TCP socket under the TLS layer, where a byte read
// would put the TLS stream out of step: a healthy idle connection has nothing pending and passes,
// so commands in a row reuse the pool's connection rather than dial a new one each.
func TestTLSReusesIdleConnections(t *testing.T) {
	server, files := startTLSServer(t)
	ctx := context.Background()
	s, err := redisstore.Open(ctx, server.URL(), redisstore.Options{Prefix: uniquePrefix(), TLSCAFile: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	before := server.ConnectionsReceived()
	const commands = 20
	for i := range commands {
		if _, err := s.Incr(ctx, "n"); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond) // idle in the pool between commands
	}
	// One more connection is the count's own.
	if dialed := server.ConnectionsReceived() - before - 1; dialed != 0 {
		t.Errorf("%d commands in a row dialed %d new TLS connections, want 0 (the idle one reused)", commands, dialed)
	}
}

// The twins of TestARestartedServerFailsNoCommand on a real redis-server, plain and over TLS:
// after a restart (SIGTERM, then the same port again) the pool's idle connections are dead, and
// no command may fail on one of them, although they were idle for less than pingAfterIdle.
func TestARestartedRealServerFailsNoCommand(t *testing.T) {
	for name, useTLS := range map[string]bool{"plain": false, "TLS": true} {
		t.Run(name, func(t *testing.T) {
			opts := redistest.ServerOptions{Password: tlsPassword}
			storeOpts := redisstore.Options{Prefix: uniquePrefix()}
			if useTLS {
				files := redistest.NewTLSFiles(t)
				opts.TLS, storeOpts.TLSCAFile = &files, files.CA
			}
			server := redistest.StartServer(t, opts)
			ctx := context.Background()
			s, err := redisstore.Open(ctx, server.URL(), storeOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			restartFailsNoCommand(t, s, server.Restart)
		})
	}
}
