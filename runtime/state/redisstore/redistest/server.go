package redistest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// TLSFiles are PEM files written for one test: a throwaway CA and a server certificate it
// signed for the loopback addresses (127.0.0.1, ::1, localhost).
type TLSFiles struct {
	CA   string // the CA's certificate, what a client trusts
	Cert string // the server's certificate
	Key  string // the server's private key
}

// NewTLSFiles generates a CA and a loopback server certificate into t.TempDir(). Each call makes a
// new CA, so the files of two calls do not trust each other.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	files, err := newTLSFiles(t.TempDir())
	if err != nil {
		t.Fatalf("generate test certificates: %v", err)
	}
	return files
}

func newTLSFiles(dir string) (TLSFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lensfn test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TLSFiles{}, err
	}
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}, ca, &serverKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(serverKey)
	if err != nil {
		return TLSFiles{}, err
	}
	files := TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key")}
	for path, block := range map[string]*pem.Block{
		files.CA:   {Type: "CERTIFICATE", Bytes: caDER},
		files.Cert: {Type: "CERTIFICATE", Bytes: serverDER},
		files.Key:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return TLSFiles{}, err
		}
	}
	return files, nil
}

// ServerOptions say how StartServer runs redis-server.
type ServerOptions struct {
	// Password, when set, is required of every client (--requirepass).
	Password string
	// TLS, when set, makes the server speak only TLS (--port 0 --tls-port), with the certificate
	// of these files, not asking clients for one (--tls-auth-clients no).
	TLS *TLSFiles
}

// Server is a real redis-server process on a loopback port, stopped when the test ends. Its data
// lives in memory only: a restart loses it.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	opts ServerOptions
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer // the running process's output (its log)
	exit chan struct{} // closed when the running process has exited
}

// StartServer starts redis-server on a free loopback port. The test is skipped when redis-server
// is not on PATH, or when TLS is asked for and this redis-server was built without it.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), opts: opts}
	const attempts = 3 // another process may take the free port before redis-server binds it
	for i := 0; ; i++ {
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		err = s.start()
		if err == nil {
			break
		}
		if reason := s.lacksTLS(); reason != "" {
			t.Skipf("this redis-server (%s) cannot serve TLS: %s", bin, reason)
		}
		if i == attempts-1 || !strings.Contains(s.log(), "Address already in use") {
			t.Fatal(err)
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// URL is the store URL of the server: redis:// or rediss://127.0.0.1:<port>/0, with the password
// when there is one.
func (s *Server) URL() string {
	u := url.URL{Scheme: "redis", Host: s.Addr(), Path: "/0"}
	if s.opts.TLS != nil {
		u.Scheme = "rediss"
	}
	if s.opts.Password != "" {
		u.User = url.UserPassword("", s.opts.Password)
	}
	return u.String()
}

// Addr is the server's host:port, without credentials.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// ConnectionsReceived is the number of connections the running process has accepted (INFO
// stats total_connections_received), read on a connection of its own (so counting it too).
func (s *Server) ConnectionsReceived() int {
	s.t.Helper()
	reply, err := s.command("INFO", "stats")
	if err != nil {
		s.t.Fatal(err)
	}
	for line := range strings.Lines(reply) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				s.t.Fatalf("INFO stats: %q", line)
			}
			return n
		}
	}
	s.t.Fatalf("INFO stats has no total_connections_received: %q", reply)
	return 0
}

// Restart stops the server (SIGTERM, as an orchestrator does) and starts it again on the same
// port, with its data lost.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// Stop ends the server and waits for it. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exit:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exit
	}
}

// start runs redis-server and waits until it answers PING.
func (s *Server) start() error {
	args := []string{"--bind", "127.0.0.1", "--dir", s.dir, "--save", "", "--appendonly", "no", "--logfile", ""}
	if s.opts.TLS != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port),
			"--tls-cert-file", s.opts.TLS.Cert, "--tls-key-file", s.opts.TLS.Key,
			"--tls-ca-cert-file", s.opts.TLS.CA, "--tls-auth-clients", "no")
	} else {
		args = append(args, "--port", strconv.Itoa(s.port))
	}
	if s.opts.Password != "" {
		// On the command line only for a test: any local user can read a process's arguments.
		args = append(args, "--requirepass", s.opts.Password)
	}
	cmd := exec.Command(s.bin, args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: out, mu: &s.mu}, &lockedWriter{w: out, mu: &s.mu}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exit := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exit)
	}()
	s.mu.Lock()
	s.cmd, s.out, s.exit = cmd, out, exit
	s.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case <-exit:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("redis-server exited at start:\n%s", s.log())
		default:
		}
		if _, err := s.command("PING"); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server does not answer on %s (%v):\n%s", s.Addr(), err, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lacksTLS says, from the log of a server that did not start, why it cannot serve TLS ("" when
// that was not the reason): a build without TLS rejects the tls-* settings.
func (s *Server) lacksTLS() string {
	if s.opts.TLS == nil {
		return ""
	}
	for line := range strings.Lines(s.log()) {
		l := strings.ToLower(line)
		if strings.Contains(l, "tls") && (strings.Contains(l, "not supported") || strings.Contains(l, "not compiled") ||
			strings.Contains(l, "bad directive") || strings.Contains(l, "missing implement")) {
			return strings.TrimSpace(line)
		}
	}
	// A build without TLS names the setting it does not know (">>> 'tls-port \"6380\"'"), then
	// "Bad directive or wrong number of arguments".
	if log := s.log(); strings.Contains(log, "Bad directive") && strings.Contains(log, "'tls-") {
		return "it does not know the tls-* settings"
	}
	return ""
}

func (s *Server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// command runs one command on a fresh connection and returns its reply's text (a status or bulk
// string), through redigo directly, so that the helper checks the server independently of the
// store under test.
func (s *Server) command(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	opts := []redis.DialOption{redis.DialReadTimeout(2 * time.Second), redis.DialWriteTimeout(2 * time.Second)}
	if s.opts.Password != "" {
		opts = append(opts, redis.DialPassword(s.opts.Password))
	}
	if s.opts.TLS != nil {
		pool, err := loadCA(s.opts.TLS.CA)
		if err != nil {
			return "", err
		}
		opts = append(opts, redis.DialUseTLS(true),
			redis.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}))
	}
	conn, err := redis.DialContext(ctx, "tcp", s.Addr(), opts...)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	cmdArgs := make([]any, len(args)-1)
	for i, a := range args[1:] {
		cmdArgs[i] = a
	}
	return redis.String(conn.Do(args[0], cmdArgs...))
}

func loadCA(path string) (*x509.CertPool, error) {
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedWriter lets the process's output be read while it is being written.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
