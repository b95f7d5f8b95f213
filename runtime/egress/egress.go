package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrNotAllowed: the endpoint's host or one of its addresses is outside the policy.
var ErrNotAllowed = errors.New("the endpoint is not allowed by this installation's endpoint policy")

// ErrUnreachable: the endpoint could not be resolved or connected to. Why (refused, timed out,
// no such host) is deliberately not said.
var ErrUnreachable = errors.New("the endpoint is unreachable")

// Rule matches a destination: a CIDR (10.0.0.0/8, 127.0.0.2/32, fe80::/10), an address, a host
// name (case-insensitive) or a *.suffix wildcard.
type Rule struct {
	Prefix netip.Prefix // valid for an address rule
	Host   string       // lower-case host name; a leading "*." matches any subdomain
}

func (r Rule) String() string {
	if r.Prefix.IsValid() {
		return r.Prefix.String()
	}
	return r.Host
}

func (r Rule) matchesHost(host string) bool {
	if r.Host == "" {
		return false
	}
	if suffix, ok := strings.CutPrefix(r.Host, "*"); ok {
		return strings.HasSuffix(host, suffix)
	}
	return host == r.Host
}

func (r Rule) matchesAddr(a netip.Addr) bool { return r.Prefix.IsValid() && r.Prefix.Contains(a) }

// Rules are the operator's lists. An empty Allow allows every destination the deny lists do
// not refuse.
type Rules struct {
	Allow, Deny []Rule
}

// DefaultDeny is refused unless an Allow CIDR names the address explicitly: link-local
// (where every cloud's metadata service lives), this-host addresses, and the metadata
// addresses and names outside link-local.
var DefaultDeny = mustRules(
	"169.254.0.0/16", "fe80::/10", "0.0.0.0/8", "::/128",
	"100.100.100.200/32", // Alibaba Cloud metadata
	"fd00:ec2::254/128",  // AWS IMDS over IPv6
	"168.63.129.16/32",   // Azure wireserver
	"metadata.google.internal", "metadata.goog", "metadata",
)

// ParseRules reads LENS_ENDPOINT_ALLOW and LENS_ENDPOINT_DENY: comma-separated CIDRs,
// addresses and host names.
func ParseRules(allow, deny string) (Rules, error) {
	var r Rules
	var err error
	if r.Allow, err = parseList("LENS_ENDPOINT_ALLOW", allow); err != nil {
		return r, err
	}
	if r.Deny, err = parseList("LENS_ENDPOINT_DENY", deny); err != nil {
		return r, err
	}
	return r, nil
}

func parseList(name, raw string) ([]Rule, error) {
	var out []Rule
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		rule, err := parseRule(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, rule)
	}
	return out, nil
}

func parseRule(s string) (Rule, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Rule{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", s)
		}
		return Rule{Prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		a = policyAddr(a)
		return Rule{Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	host := normalHost(s)
	body := strings.TrimPrefix(host, "*.")
	if body == "" || strings.ContainsAny(body, "*:/ ") {
		return Rule{}, fmt.Errorf("%q is not a host name, *.domain, address or CIDR", s)
	}
	return Rule{Host: host}, nil
}

func mustRules(list ...string) []Rule {
	out := make([]Rule, len(list))
	for i, s := range list {
		r, err := parseRule(s)
		if err != nil {
			panic(err)
		}
		out[i] = r
	}
	return out
}

func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// Policy applies Rules to outbound connections. A nil *Policy applies DefaultDeny only.
type Policy struct {
	rules    Rules
	resolver *net.Resolver
}

// New returns the policy of rules.
func New(rules Rules) *Policy { return &Policy{rules: rules, resolver: net.DefaultResolver} }

// hostAllowed decides what the name alone decides: false when a deny rule names it, or when
// the allow list holds only names and none is this one (then DNS is not even asked).
func (p *Policy) hostAllowed(host string) bool {
	host = normalHost(host)
	rules := p.rulesOrEmpty()
	for _, list := range [][]Rule{rules.Deny, DefaultDeny} {
		for _, r := range list {
			if r.matchesHost(host) {
				return false
			}
		}
	}
	if len(rules.Allow) == 0 {
		return true
	}
	for _, r := range rules.Allow {
		if r.Prefix.IsValid() || r.matchesHost(host) {
			return true
		}
	}
	return false
}

// addrAllowed decides for one resolved address of host. The policy decides on the address
// itself: a zone (fe80::1%eth0) only picks the interface, and netip.Prefix.Contains is false
// for any zoned address, so matching with the zone kept would let [::1%lo] past a ::1 deny.
func (p *Policy) addrAllowed(host string, a netip.Addr) bool {
	host, a = normalHost(host), policyAddr(a)
	rules := p.rulesOrEmpty()
	for _, r := range rules.Deny {
		if r.matchesAddr(a) || r.matchesHost(host) {
			return false
		}
	}
	explicit := false
	for _, r := range rules.Allow {
		explicit = explicit || r.matchesAddr(a)
	}
	for _, r := range DefaultDeny {
		if (r.matchesAddr(a) || r.matchesHost(host)) && !explicit {
			return false
		}
	}
	if len(rules.Allow) == 0 || explicit {
		return true
	}
	for _, r := range rules.Allow {
		if r.matchesHost(host) {
			return true
		}
	}
	return false
}

// policyAddr is the address a rule is matched against: without its zone, and an IPv4-mapped
// IPv6 address as the IPv4 address it reaches.
func policyAddr(a netip.Addr) netip.Addr { return a.WithZone("").Unmap() }

func (p *Policy) rulesOrEmpty() Rules {
	if p == nil {
		return Rules{}
	}
	return p.rules
}

func (p *Policy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	resolver := net.DefaultResolver
	if p != nil && p.resolver != nil {
		resolver = p.resolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, ErrUnreachable
	}
	return addrs, nil
}

// resolve returns host's addresses, refusing when the name or any address is outside the
// policy: one denied answer is enough, so a name cannot mix a public address with a private one.
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if !p.hostAllowed(host) {
		return nil, ErrNotAllowed
	}
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !p.addrAllowed(host, a) {
			return nil, ErrNotAllowed
		}
	}
	return addrs, nil
}

// Check says whether rawURL may be called: an http(s) URL whose host and every address it
// resolves to are inside the policy. It returns ErrNotAllowed or ErrUnreachable.
func (p *Policy) Check(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return ErrNotAllowed
	}
	_, err = p.resolve(ctx, u.Hostname())
	return err
}

// DialContext connects to addr ("host:port") only through addresses the policy allows, dialling
// the checked addresses themselves so DNS is not asked twice. Use it as a Transport's
// DialContext.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, ErrNotAllowed
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		// The address really connected to is checked once more, whatever resolved it.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !p.addrAllowed(host, ap.Addr()) {
				return ErrNotAllowed
			}
			return nil
		}}
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ErrNotAllowed) {
			return nil, ErrNotAllowed
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, ErrUnreachable
}

// Transport is an http.Transport that dials through the policy and uses no proxy (a proxy
// would connect on the caller's behalf, past the policy).
func (p *Policy) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext
	return t
}

// Client is an http.Client through Transport that re-checks the policy on every redirect
// (at most 5). A zero timeout leaves the deadline to the request's context.
func (p *Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: p.Transport(), CheckRedirect: p.CheckRedirect}
}

// CheckRedirect is an http.Client CheckRedirect that refuses a redirect outside the policy and
// sends no credential to another origin (DropCredentialsAcrossOrigins).
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return ErrUnreachable
	}
	DropCredentialsAcrossOrigins(req, via)
	return p.Check(req.Context(), req.URL.String())
}

// CredentialHeaders are the headers that carry an endpoint's credential.
var CredentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Api-Key", "X-Api-Key"}

// DropCredentialsAcrossOrigins removes the credential headers from a redirected request whose
// origin differs from the first request's. net/http keeps Authorization on a redirect to the
// same host name, whatever the port, so a server on another port of the endpoint's host would
// receive the key; an origin is scheme, host and port.
func DropCredentialsAcrossOrigins(req *http.Request, via []*http.Request) {
	if len(via) > 0 && !SameOrigin(via[0].URL, req.URL) {
		for _, h := range CredentialHeaders {
			req.Header.Del(h)
		}
	}
}

// SameOrigin says whether a and b have the same scheme, host and port (the scheme's default
// port when none is written).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// InternalHost says whether a Host header names something only this machine or the cluster
// resolves: an address, localhost, a single-label name, or a cluster-internal name (*.svc,
// *.cluster.local). A DNS-rebinding page and a request through a public ingress carry a public
// name; a Knative Broker delivers to a subscriber's cluster-internal address.
func InternalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host != "" && (host == "localhost" || !strings.Contains(host, ".") || strings.HasSuffix(host, ".localhost") ||
		strings.HasSuffix(host, ".svc") || strings.HasSuffix(host, ".cluster.local"))
}

// Reason reduces any error of a call through the policy to what may be shown: ErrNotAllowed
// or ErrUnreachable.
func Reason(err error) error {
	if errors.Is(err, ErrNotAllowed) {
		return ErrNotAllowed
	}
	return ErrUnreachable
}
