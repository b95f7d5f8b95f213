package analysis_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

func ptr[T any](v T) *T { return &v }

// ok is a successful streamed request sent on schedule.
func ok(id int64, at, latencyMs float64) loadgen.Record {
	return loadgen.Record{
		RequestID: id, StatusCode: ptr(200), Successful: true,
		ScheduledAtSeconds: at, StartedAtSeconds: at, CompletedAtSeconds: at + latencyMs/1000,
		LatencyMs: latencyMs, TTFTMs: ptr(latencyMs / 4), TPOTMs: ptr(latencyMs / 100),
		InputTokens: 10, OutputTokens: 5,
	}
}

// failed is a request that got status (nil: no response) and an error.
func failed(id int64, at, latencyMs float64, status *int) loadgen.Record {
	return loadgen.Record{
		RequestID: id, StatusCode: status, Error: ptr("failed"),
		ScheduledAtSeconds: at, StartedAtSeconds: at, CompletedAtSeconds: at + latencyMs/1000,
		LatencyMs: latencyMs, InputTokens: 10,
	}
}

func summarize(t testing.TB, opts analysis.Options, records ...loadgen.Record) analysis.Summary {
	t.Helper()
	acc, err := analysis.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		if err := acc.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	s, err := acc.Summary()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func assertNear(t *testing.T, name string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// mustJSON marshals v; encoding/json refuses NaN and Inf, so this also proves the summary is
// valid JSON.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("summary is not valid JSON: %v", err)
	}
	return raw
}
