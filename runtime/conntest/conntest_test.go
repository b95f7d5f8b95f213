package conntest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/lensfn/lensfn/runtime/conntest"
)

// Requests over one kept-alive connection count once; a client that keeps none opens one per
// request.
func TestCountingServerCountsConnections(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	get := func(c *http.Client) {
		t.Helper()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	keep := &http.Client{Transport: &http.Transport{}}
	get(keep)
	get(keep)
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for two kept-alive requests, want 1", n)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get(fresh)
	get(fresh)
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections after two more without keep-alive, want 3", n)
	}
}
