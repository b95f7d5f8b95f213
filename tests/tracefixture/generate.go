package tracefixture

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// rng is a tiny deterministic generator (a linear congruential step is enough for test data
// and keeps this package free of the module's own code).
type rng struct{ s uint64 }

func (r *rng) intn(n int) int {
	r.s = r.s*6364136223846793005 + 1442695040888963407
	return int((r.s >> 33) % uint64(n))
}

// MooncakeRow is one generated mooncake_trace request.
type MooncakeRow struct {
	TimestampMs  int64
	InputLength  int
	OutputLength int
	HashIDs      []int
}

// Mooncake generates n mooncake_trace rows spread over span milliseconds: non-decreasing
// integer timestamps starting at 0 (with repeats, as in the real trace), prompts of 100 to
// 4,000 tokens with ceil(input/512) hash ids, half of them sharing a leading block with the
// previous row, and outputs of 1 to 64 tokens.
func Mooncake(n int, spanMs int64, seed uint64) []MooncakeRow {
	r := &rng{s: seed}
	rows := make([]MooncakeRow, n)
	next := 0
	for i := range rows {
		in := 100 + r.intn(3900)
		ids := make([]int, (in+511)/512)
		for j := range ids {
			ids[j] = next
			next++
		}
		if i > 0 && r.intn(2) == 0 {
			ids[0] = rows[i-1].HashIDs[0] // a shared prefix block
		}
		rows[i] = MooncakeRow{TimestampMs: spanMs * int64(i) / int64(n), InputLength: in, OutputLength: 1 + r.intn(64), HashIDs: ids}
	}
	return rows
}

// MooncakeJSONL encodes rows as the format's JSONL, in the real files' key order.
func MooncakeJSONL(rows []MooncakeRow) []byte {
	var b bytes.Buffer
	for _, row := range rows {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, row.TimestampMs, row.InputLength, row.OutputLength)
		for j, id := range row.HashIDs {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(id))
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

// InWindow counts the rows whose arrival falls in [startMs, endMs).
func InWindow(rows []MooncakeRow, startMs, endMs int64) int {
	n := 0
	for _, row := range rows {
		if row.TimestampMs >= startMs && row.TimestampMs < endMs {
			n++
		}
	}
	return n
}

// WEKATrace generates one weka_public_dataset trace object: requests main-agent requests one
// to three seconds apart (block size 64, floor(in/64) hash ids growing with the context, so
// each turn extends the previous one's prefix), and, when withSubagent, a completed
// subagent after the first request with two inner requests at times relative to its spawn.
// It returns the JSON and the number of requests (inner ones included) it holds.
func WEKATrace(id string, requests int, withSubagent bool, seed uint64) ([]byte, int) {
	r := &rng{s: seed}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id": %q, "models": ["claude-sonnet-4-20250514"], "block_size": 64, "hash_id_scope": "local", "tool_tokens": 900, "system_tokens": 120, "requests": [`, id)
	t, in, nextID, total := 0.0, 1000+r.intn(1000), 1, 0
	request := func(t float64, in int, model string) {
		fmt.Fprintf(&b, `{"t": %s, "type": "n", "model": %q, "in": %d, "out": %d, "hash_ids": [`,
			strconv.FormatFloat(t, 'f', 3, 64), model, in, 1+r.intn(40))
		for j := 0; j < in/64; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(j + 1)) // the context grows: the same leading ids
		}
		fmt.Fprintf(&b, `], "input_types": ["text"], "output_types": ["text"], "stop": "end_turn", "api_time": 0.5, "think_time": 0.0}`)
		nextID++
		total++
	}
	for i := 0; i < requests; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		request(t, in, "claude-sonnet-4-20250514")
		if i == 0 && withSubagent {
			fmt.Fprintf(&b, `, {"t": %s, "type": "subagent", "agent_id": "agent_001", "subagent_type": "Explore", "duration_ms": 1500, "total_tokens": 3000, "tool_use_count": 1, "status": "completed", "models": ["claude-haiku-4-5-20251001"], "tool_tokens": 700, "system_tokens": 100, "requests": [`,
				strconv.FormatFloat(t+0.2, 'f', 3, 64))
			request(0, 800, "claude-haiku-4-5-20251001")
			b.WriteString(", ")
			request(0.6, 900, "claude-haiku-4-5-20251001")
			b.WriteString("]}")
		}
		t += 1 + float64(r.intn(2000))/1000
		in += 100 + r.intn(400)
	}
	b.WriteString("]}\n")
	return b.Bytes(), total
}

// WEKADir writes traces generated WEKA traces (trace_0000.json ...) of requests requests
// each, every other one with a subagent, into a new directory and returns it with the
// total number of requests.
func WEKADir(tb testing.TB, traces, requests int) (string, int) {
	tb.Helper()
	dir := tb.TempDir()
	total := 0
	for i := 0; i < traces; i++ {
		raw, n := WEKATrace(fmt.Sprintf("trace_%04d", i), requests, i%2 == 0, uint64(i)+1)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("trace_%04d.json", i)), raw, 0o644); err != nil {
			tb.Fatal(err)
		}
		total += n
	}
	return dir, total
}

// WriteFile writes data to name in a new temporary directory and returns its path.
func WriteFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
