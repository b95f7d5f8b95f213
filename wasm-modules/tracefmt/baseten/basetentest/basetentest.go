// Package basetentest writes small Baseten Parquet files for tests (no public Baseten
// dataset exists, so the hand-written cases are built here, shaped like pyarrow's output:
// optional columns, total_hashes as a LIST). Imports: the standard library and parquet-go.
package basetentest

import (
	"bytes"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Row is one Baseten log row.
type Row struct {
	TimestampStartUnixMs int64   `parquet:"timestamp_start_unix_ms"`
	Prompt               string  `parquet:"prompt"`
	InputTokens          int64   `parquet:"input_tokens"`
	OutputTokens         int64   `parquet:"output_tokens"`
	TotalHashes          []int64 `parquet:"total_hashes,list"`
	BlockSize            *int64  `parquet:"block_size,optional"`
	ProvidedSessionID    *string `parquet:"provided_session_id,optional"`
	DurationE2EMs        *int64  `parquet:"duration_e2e_ms,optional"`
	RequestCanceled      *int64  `parquet:"request_canceled,optional"`
}

// Encode returns rows as a Parquet file.
func Encode(tb testing.TB, rows []Row) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Row](&buf)
	if _, err := w.Write(rows); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// WriteFile writes rows as a Parquet file at path.
func WriteFile(tb testing.TB, path string, rows []Row) {
	tb.Helper()
	if err := os.WriteFile(path, Encode(tb, rows), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// Sample is a small, hand-written log: two sessions and a session-less row, out of time
// order in the file, with one cancelled request (output 0).
func Sample() []Row {
	return []Row{
		{TimestampStartUnixMs: 1767225600123, Prompt: "You are a helpful assistant.\nUser: hi", InputTokens: 1834, OutputTokens: 212,
			TotalHashes: []int64{9811, 9812, 9813}, BlockSize: Ptr[int64](512), ProvidedSessionID: Ptr("sess-42"), DurationE2EMs: Ptr[int64](2310), RequestCanceled: Ptr[int64](0)},
		{TimestampStartUnixMs: 1767225603000, Prompt: "second turn", InputTokens: 2100, OutputTokens: 0,
			TotalHashes: []int64{9811, 9812, 9813, 9814}, BlockSize: Ptr[int64](512), ProvidedSessionID: Ptr("sess-42"), RequestCanceled: Ptr[int64](1)},
		{TimestampStartUnixMs: 1767225600000, Prompt: "earliest", InputTokens: 10, OutputTokens: 5},
		{TimestampStartUnixMs: 1767225601000, Prompt: "other session ünïcode", InputTokens: 20, OutputTokens: 7, ProvidedSessionID: Ptr("s2")},
	}
}
