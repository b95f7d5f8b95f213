package local

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpstreamErrorsSayWhatHappened: only a function that is really restarting is a 503; a
// running one that gave no answer is a 502 with the cause.
func TestUpstreamErrorsSayWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		alive    bool
		status   int
		contains string
	}{
		{false, 503, "is restarting"},
		{true, 502, "did not answer: connection reset by peer"},
	} {
		p := &process{name: "simulation-api", alive: tc.alive}
		w := httptest.NewRecorder()
		upstreamError(p)(w, httptest.NewRequest("POST", "/api/simulation/tasks", nil), errors.New("connection reset by peer"))
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.contains) || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("alive=%t: %d %s", tc.alive, w.Code, w.Body)
		}
	}
}
