package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/runtime/egress"
)

func policy(t testing.TB, allow, deny string) *egress.Policy {
	t.Helper()
	rules, err := egress.ParseRules(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return egress.New(rules)
}

func TestParseRules(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "a b", "http://x", "*"} {
		if _, err := egress.ParseRules(bad, ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := egress.ParseRules("10.0.0.0/8, api.example.com, *.corp.example, ::1", "127.0.0.2"); err != nil {
		t.Fatal(err)
	}
}

// TestCheck decides on the URL and every address it resolves to; refusals never connect.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, allow, deny, url string
		want                   error
	}{
		{"loopback by default", "", "", "http://127.0.0.1:9/v1", nil},
		{"denied address", "", "127.0.0.2", "http://127.0.0.2:9/v1", egress.ErrNotAllowed},
		{"denied CIDR", "", "127.0.0.0/8", "http://127.0.0.1:9/v1", egress.ErrNotAllowed},
		{"denied after DNS", "", "127.0.0.0/8,::1", "http://localhost:9/v1", egress.ErrNotAllowed},
		{"denied name", "", "localhost", "http://LOCALHOST.:9/v1", egress.ErrNotAllowed},
		{"metadata by default", "", "", "http://169.254.169.254/latest/meta-data/", egress.ErrNotAllowed},
		{"metadata v6 by default", "", "", "http://[fd00:ec2::254]/", egress.ErrNotAllowed},
		{"link-local v6", "", "", "http://[fe80::1]:80/", egress.ErrNotAllowed},
		{"mapped v4 link-local", "", "", "http://[::ffff:169.254.169.254]/", egress.ErrNotAllowed},
		{"this host", "", "", "http://0.0.0.0:9/", egress.ErrNotAllowed},
		{"metadata name", "", "", "http://metadata.google.internal/", egress.ErrNotAllowed},
		{"outside the allow list", "10.0.0.0/8", "", "http://127.0.0.1:9/v1", egress.ErrNotAllowed},
		{"inside the allow list", "127.0.0.0/8", "", "http://127.0.0.1:9/v1", nil},
		{"allowed name", "localhost", "", "http://localhost:9/v1", nil},
		{"name outside a names-only allow list (no DNS asked)", "localhost", "", "http://example.com/v1", egress.ErrNotAllowed},
		{"explicit allow of link-local", "169.254.10.0/24", "", "http://169.254.10.1/", nil},
		{"deny beats allow", "127.0.0.0/8", "127.0.0.2", "http://127.0.0.2:9/", egress.ErrNotAllowed},
		{"not http", "", "", "file:///etc/passwd", egress.ErrNotAllowed},
		// Every IP form the policy covers: a zone or a mapping changes the route at most,
		// never the decision.
		{"link-local v6 with a zone", "", "", "http://[fe80::1%25eth0]/", egress.ErrNotAllowed},
		{"metadata v6 with a zone", "", "", "http://[fd00:ec2::254%25eth0]/", egress.ErrNotAllowed},
		{"denied loopback v6 with a zone", "", "::1", "http://[::1%25lo]:9/", egress.ErrNotAllowed},
		{"denied loopback v6 with a numeric zone", "", "::1", "http://[::1%251]:9/", egress.ErrNotAllowed},
		{"denied CIDR v6 with a zone", "", "fd00::/8", "http://[fd00::2%25eth0]:9/", egress.ErrNotAllowed},
		{"denied v4 as mapped v6", "", "127.0.0.0/8", "http://[::ffff:127.0.0.1]:9/", egress.ErrNotAllowed},
		{"denied v4 as mapped v6 with a zone", "", "127.0.0.0/8", "http://[::ffff:127.0.0.1%25lo]:9/", egress.ErrNotAllowed},
		{"denied v6 spelled in full", "", "::1", "http://[0:0:0:0:0:0:0:1]:9/", egress.ErrNotAllowed},
		{"denied v6 in upper case", "", "fd00::/8", "http://[FD00::2]:9/", egress.ErrNotAllowed},
		{"this host v6", "", "", "http://[::]:9/", egress.ErrNotAllowed},
		{"zoned address outside the allow list", "10.0.0.0/8", "", "http://[::1%25lo]:9/", egress.ErrNotAllowed},
		{"zoned address inside an explicit allow", "fe80::/10", "", "http://[fe80::1%25eth0]/", nil},
		{"zone in a deny rule matches the bare address", "", "::1%lo", "http://[::1]:9/", egress.ErrNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := policy(t, tc.allow, tc.deny).Check(ctx, tc.url)
			if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
				t.Fatalf("Check(%s) = %v, want %v", tc.url, err, tc.want)
			}
		})
	}
	var nilPolicy *egress.Policy
	if err := nilPolicy.Check(ctx, "http://169.254.169.254/"); !errors.Is(err, egress.ErrNotAllowed) {
		t.Fatalf("a nil policy lets metadata through: %v", err)
	}
}

// TestClientRefusesDeniedDestinationsAndRedirects: the dialer refuses a denied address, a
// redirect to one is not followed, and errors name neither port nor cause.
func TestClientRefusesDeniedDestinationsAndRedirects(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/redirect" {
			_, port, _ := net.SplitHostPort(r.Host)
			http.Redirect(w, r, "http://127.0.0.2:"+port+"/secret", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	p := policy(t, "", "127.0.0.2")
	client := p.Client(0)

	resp, err := client.Get(srv.URL + "/fine")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	_, err = client.Get("http://127.0.0.2:" + port + "/direct")
	if !errors.Is(err, egress.ErrNotAllowed) {
		t.Fatalf("direct: %v", err)
	}
	_, err = client.Get(srv.URL + "/redirect")
	if !errors.Is(err, egress.ErrNotAllowed) {
		t.Fatalf("redirect: %v", err)
	}
	if hits.Load() != 2 {
		t.Fatalf("%d requests reached the server, want 2 (fine, redirect)", hits.Load())
	}
	// The dialer itself refuses, whoever built the request (a Transport without CheckRedirect).
	if _, err := p.DialContext(context.Background(), "tcp", "127.0.0.2:"+port); !errors.Is(err, egress.ErrNotAllowed) {
		t.Fatalf("dial: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	_, err = client.Get("http://" + closed + "/")
	if !errors.Is(err, egress.ErrUnreachable) || strings.Contains(egress.Reason(err).Error(), "refused") {
		t.Fatalf("closed port: %v", err)
	}
}

// TestZonedAddressDoesNotReachADeniedServer: with ::1 denied, a server listening on [::1] is
// reached neither as [::1] nor through a zone ([::1%lo]), by the client or by the dialer alone.
func TestZonedAddressDoesNotReachADeniedServer(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p := policy(t, "", "::1")
	for _, zone := range []string{"", "%25lo", "%251", "%25eth0"} {
		_, err := p.Client(0).Get("http://[::1" + zone + "]:" + port + "/")
		if !errors.Is(err, egress.ErrNotAllowed) {
			t.Errorf("[::1%s]: %v, want not allowed", zone, err)
		}
	}
	for _, addr := range []string{"[::1%lo]:" + port, "[::1%1]:" + port} {
		if _, err := p.DialContext(context.Background(), "tcp", addr); !errors.Is(err, egress.ErrNotAllowed) {
			t.Errorf("dial %s: %v, want not allowed", addr, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the denied server", hits.Load())
	}
	// Allowed, the same zoned address connects: the fix strips the zone for the decision only.
	resp, err := policy(t, "", "").Client(0).Get("http://[::1%25lo]:" + port + "/")
	if err != nil {
		t.Fatalf("allowed zoned loopback: %v", err)
	}
	resp.Body.Close()
}

// TestRedirectsKeepTheKeyWithinItsOrigin: the policy's client sends Authorization after a
// redirect only within the first request's origin: not to another port of the same host
// (net/http alone would), nor to another scheme or host.
func TestRedirectsKeepTheKeyWithinItsOrigin(t *testing.T) {
	seen := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- "other:" + r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
	}))
	defer other.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/final":
			seen <- "front:" + r.Header.Get("Authorization")
		default:
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		}
	}))
	defer front.Close()
	client := policy(t, "", "").Client(0)
	for path, want := range map[string]string{"/same": "front:Bearer k", "/port": "other:"} {
		req, _ := http.NewRequest("GET", front.URL+path, nil)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-Api-Key", "k")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := <-seen; got != want {
			t.Errorf("%s: the destination saw %q, want %q", path, got, want)
		}
	}
}
