package analysis_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

func summaryOf(t *testing.T, records []loadgen.Record) analysis.Summary {
	t.Helper()
	return summarize(t, analysis.Options{}, records...)
}

func failedRecord(id int64, status *int, msg string) loadgen.Record {
	return loadgen.Record{RequestID: id, StatusCode: status, Error: &msg, ScheduledAtSeconds: float64(id),
		StartedAtSeconds: float64(id), CompletedAtSeconds: float64(id) + 0.01, LatencyMs: 10}
}

func okRecord(id int64) loadgen.Record {
	ok := 200
	return loadgen.Record{RequestID: id, StatusCode: &ok, Successful: true, ScheduledAtSeconds: float64(id),
		StartedAtSeconds: float64(id), CompletedAtSeconds: float64(id) + 0.05, LatencyMs: 50, OutputTokens: 10}
}

// The run: 159 of 162 requests refused with 400 "maximum context length" must carry a
// low-success warning and one naming the shared cause and the flag to change.
func TestWarningsNameALowSuccessRateAndTheSharedCause(t *testing.T) {
	bad := 400
	var records []loadgen.Record
	for i := range int64(159) {
		records = append(records, failedRecord(i+1, &bad, fmt.Sprintf(
			"This model's maximum context length is 1024 tokens. However, you requested %d tokens (%d in the messages, %d in the completion).", 2000+i, 1900+i, 100)))
	}
	records = append(records, okRecord(160), okRecord(161), okRecord(162))
	s := summaryOf(t, records)
	if len(s.FailureCauses) != 1 || s.FailureCauses[0].Count != 159 || *s.FailureCauses[0].StatusCode != 400 ||
		!strings.Contains(s.FailureCauses[0].Message, "maximum context length is N tokens") {
		t.Fatalf("failure causes %+v", s.FailureCauses)
	}
	w := analysis.Warnings(s)
	if len(w) != 2 {
		t.Fatalf("warnings %q", w)
	}
	if !strings.HasPrefix(w[0], "only 3 of 162 requests succeeded (1.9%)") {
		t.Errorf("first warning %q", w[0])
	}
	if !strings.HasPrefix(w[1], "159 of 159 failed requests share one cause, HTTP 400") || !strings.Contains(w[1], "--max-model-len") {
		t.Errorf("second warning %q", w[1])
	}
}

// A healthy run warns about nothing; a run with scattered failures above the threshold names no
// shared cause.
func TestWarningsStayQuietWhenThereIsNothingToSay(t *testing.T) {
	var records []loadgen.Record
	for i := range int64(40) {
		records = append(records, okRecord(i+1))
	}
	if w := analysis.Warnings(summaryOf(t, records)); len(w) != 0 {
		t.Fatalf("healthy run warns %q", w)
	}
	c500, c429 := 500, 429
	records = append(records, failedRecord(41, &c500, "boom"), failedRecord(42, &c429, "slow down"), failedRecord(43, nil, "connection refused"))
	s := summaryOf(t, records)
	if w := analysis.Warnings(s); len(w) != 0 {
		t.Fatalf("40 of 43 succeeded with three different failures, yet warnings %q", w)
	}
	if len(s.FailureCauses) != 3 {
		t.Fatalf("failure causes %+v", s.FailureCauses)
	}
}

// Distinct causes are bounded: a run whose every error differs keeps at most MaxFailureCauses
// in the summary and a bounded count in memory.
func TestFailureCausesAreBounded(t *testing.T) {
	var records []loadgen.Record
	for i := range int64(1000) {
		records = append(records, failedRecord(i+1, nil, fmt.Sprintf("error %c%c", 'a'+i%26, 'a'+(i/26)%26)))
	}
	s := summaryOf(t, records)
	if len(s.FailureCauses) != analysis.MaxFailureCauses {
		t.Fatalf("%d causes", len(s.FailureCauses))
	}
	if s.FailureCauses[0].Message != "other errors" {
		t.Fatalf("the overflow is not counted as other errors: %+v", s.FailureCauses[0])
	}
}
