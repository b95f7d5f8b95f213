package egress_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/egress"
)

// fuzzDenied is the fuzz policy's deny list, also written as net.IPNet so the oracle below
// decides with the older net package's parser, not the netip one the policy uses.
var fuzzDenied = []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "fd00::/8",
	"169.254.0.0/16", "fe80::/10", "0.0.0.0/8", "::/128", "fd00:ec2::254/128"}

// FuzzCheckNeverAllowsADeniedAddress: whatever the URL's spelling (zones, mappings, case,
// brackets, escapes), Check never allows an IP literal inside a denied CIDR. Host names are
// skipped: deciding them needs DNS.
func FuzzCheckNeverAllowsADeniedAddress(f *testing.F) {
	for _, seed := range []string{
		"http://127.0.0.1/", "http://[::1]:80/", "http://[::1%25lo]/", "http://[fe80::1%25eth0]/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1%25x]/", "https://[FD00:EC2::254]/",
		"http://169.254.169.254/latest", "http://[0:0:0:0:0:0:0:1]/", "http://10.1.2.3:8080/v1",
		"http://8.8.8.8/", "http://[2001:db8::1%25eth0]/",
	} {
		f.Add(seed)
	}
	p := policy(f, "", "127.0.0.0/8,::1,10.0.0.0/8,fd00::/8")
	var nets []*net.IPNet
	for _, cidr := range fuzzDenied {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			f.Fatal(err)
		}
		nets = append(nets, n)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		bare, _, _ := strings.Cut(u.Hostname(), "%")
		ip := net.ParseIP(bare)
		if ip == nil {
			t.Skip("a host name: deciding it needs DNS")
		}
		if p.Check(context.Background(), raw) != nil {
			return
		}
		for _, n := range nets {
			if n.Contains(ip) {
				t.Fatalf("Check(%q) allowed %s, inside the denied %s", raw, ip, n)
			}
		}
	})
}

// FuzzRedirectKeepsCredentialsWithinTheOrigin: after DropCredentialsAcrossOrigins a redirected
// request still carries the key only when scheme, host and port (the scheme's default when
// none is written) are the first request's, decided here by splitting the Host by hand.
func FuzzRedirectKeepsCredentialsWithinTheOrigin(f *testing.F) {
	for _, seed := range [][2]string{{"http://a.example/v1", "http://a.example:8080/v1"}, {"http://a.example/v1", "http://A.EXAMPLE:80/x"},
		{"https://a.example/", "http://a.example/"}, {"http://[::1]:80/", "http://[::1]/"}, {"http://a.example/", "http://b.a.example/"},
		{"http://127.0.0.1:9/", "http://127.0.0.1:09/"}} {
		f.Add(seed[0], seed[1])
	}
	origin := func(u *url.URL) string {
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			host, port = strings.Trim(u.Host, "[]"), ""
		}
		if port == "" { // "http://a.example:" dials port 80 as well
			port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(host) + ":" + port
	}
	f.Fuzz(func(t *testing.T, first, next string) {
		a, errA := url.Parse(first)
		b, errB := url.Parse(next)
		if errA != nil || errB != nil {
			return
		}
		req := &http.Request{URL: b, Header: http.Header{"Authorization": {"Bearer k"}, "Cookie": {"c"}}}
		egress.DropCredentialsAcrossOrigins(req, []*http.Request{{URL: a}})
		kept := req.Header.Get("Authorization") != "" || req.Header.Get("Cookie") != ""
		if kept && origin(a) != origin(b) {
			t.Fatalf("the key went from %s (%s) to %s (%s)", first, origin(a), next, origin(b))
		}
	})
}
