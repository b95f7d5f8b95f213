package console

import (
	"net/url"
	"strings"
	"testing"
)

// browserResolve is where a browser goes for a Location header on base: the WHATWG URL parser
// trims leading and trailing C0 controls and spaces, drops every tab and newline and, for
// http(s), reads a backslash as a slash.
func browserResolve(base *url.URL, location string) (*url.URL, error) {
	location = strings.TrimFunc(location, func(r rune) bool { return r <= 0x20 })
	location = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(location)
	ref, err := url.Parse(location)
	if err != nil {
		return nil, err
	}
	return base.ResolveReference(ref), nil
}

// FuzzLocalPathStaysOnTheConsole: whatever next a link carries, the redirect after sign-in
// lands on the console's own host, as a browser reads the Location.
func FuzzLocalPathStaysOnTheConsole(f *testing.F) {
	for _, seed := range []string{"/tasks", "//evil.example", "/\t/evil.example", "/\\evil.example", "/%09/evil.example",
		"https://evil.example", "/\n/evil.example", " //evil.example", "/tasks?x=//evil", "/\x00/evil.example", "\\\\evil.example"} {
		f.Add(seed)
	}
	base, _ := url.Parse("https://console.example/login")
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		u, err := browserResolve(base, got)
		if err != nil {
			t.Fatalf("localPath(%q) = %q, which a browser cannot parse: %v", next, got, err)
		}
		if u.Host != "console.example" || u.Scheme != "https" {
			t.Fatalf("localPath(%q) = %q leads a browser to %s", next, got, u)
		}
	})
}

// TestLocalPathRefusesWhatBrowsersTurnIntoAnotherHost: the reported bypass and its relatives.
func TestLocalPathRefusesWhatBrowsersTurnIntoAnotherHost(t *testing.T) {
	for _, next := range []string{"/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "/\\evil.example",
		"/\\/evil.example", "//evil.example", "/\x00/evil.example", "/\x7f/evil.example", "https://evil.example/"} {
		if got := localPath(next); got != "/" {
			t.Errorf("localPath(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{"/tasks", "/tasks/t1?tab=log", "/evaluations/w1#cases", "/a%09b"} {
		if got := localPath(next); got != next {
			t.Errorf("localPath(%q) = %q, want it kept", next, got)
		}
	}
}
