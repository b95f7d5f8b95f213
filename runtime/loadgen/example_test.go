package loadgen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// Replaying two sessions on their schedule and streaming the records to a JSONL file.
func ExampleRun() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":1}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer server.Close()

	at := func(ms float64) *float64 { return &ms }
	schedule := []loadgen.Request{
		{SessionID: "a", Turn: 0, ArrivalMs: at(0), InputTokens: 8, OutputTokens: 1, HashIDs: []int64{1}, BlockSize: 8},
		{SessionID: "a", Turn: 1, DelayMs: at(5), InputTokens: 8, OutputTokens: 1, HashIDs: []int64{1}, BlockSize: 8},
		{SessionID: "b", Turn: 0, ArrivalMs: at(2), InputTokens: 8, OutputTokens: 1},
	}
	file, err := os.CreateTemp("", "per-request-*.jsonl")
	if err != nil {
		panic(err)
	}
	defer os.Remove(file.Name())
	records := loadgen.NewJSONLWriter(file)
	progress := &loadgen.Progress{} // read it from another goroutine for live progress
	cfg := loadgen.Config{BaseURL: server.URL, Model: "m", API: loadgen.APIChat, Stream: true, Seed: 1, Progress: progress}
	stats, err := loadgen.Run(context.Background(), cfg, schedule, records)
	if err != nil {
		panic(err)
	}
	if err := records.Close(); err != nil {
		panic(err)
	}
	fmt.Println(stats.Sent, "sent,", stats.Successful, "successful,", records.Count(), "records")
	// Output: 3 sent, 3 successful, 3 records
}
