package egress_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
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
