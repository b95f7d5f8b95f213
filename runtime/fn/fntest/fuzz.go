package fntest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequest is one fuzzed request to an API route: the input is the body, or the query of a GET.
type FuzzRequest struct {
	Method, URL, Input string
	Header             map[string]string // e.g. Authorization, CloudEvents headers
}

// CheckFuzzedAnswer sends r through rt (http.DefaultTransport when nil) and fails t unless the
// answer keeps the API contract: never an internal error (502-504 blame an upstream honestly), an
// error always problem+json, a body always JSON (NDJSON for a content type that says so). An input
// no client could send (a query with bytes a request line cannot hold) is skipped.
func CheckFuzzedAnswer(t testing.TB, rt http.RoundTripper, r FuzzRequest) {
	t.Helper()
	target, body := r.URL, r.Input
	if r.Method == http.MethodGet {
		if !RequestTargetSafe(r.Input) {
			return // not sendable: net/http itself answers a malformed request line
		}
		target, body = r.URL+"?"+r.Input, ""
	}
	req, err := http.NewRequest(r.Method, target, strings.NewReader(body))
	if err != nil {
		return // not a URL a client could send
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 && resp.StatusCode != 502 && resp.StatusCode != 503 && resp.StatusCode != 504 {
		t.Fatalf("%s %s %q: %d %s", r.Method, r.URL, r.Input, resp.StatusCode, raw)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s %s %q: %d without problem+json: %s", r.Method, r.URL, r.Input, resp.StatusCode, raw)
	}
	if len(raw) > 0 && !json.Valid(raw) && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		t.Fatalf("%s %s %q: not JSON: %s", r.Method, r.URL, r.Input, raw)
	}
}

// RequestTargetSafe says whether a query can appear in an HTTP request line as it is: visible
// ASCII, no fragment.
func RequestTargetSafe(q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] <= ' ' || q[i] >= 0x7f || q[i] == '#' {
			return false
		}
	}
	return true
}
