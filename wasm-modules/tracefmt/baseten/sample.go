package baseten

import (
	"bytes"

	"github.com/parquet-go/parquet-go"
)

// SampleRow is one Baseten log row as pyarrow writes it (optional columns, total_hashes as
// a LIST). It exists so tests here and in tests/conformance can write small Parquet files
// without importing parquet-go themselves: no public Baseten dataset exists, so the
// hand-written cases are built in code.
type SampleRow struct {
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

// EncodeSample returns rows as a Parquet file.
func EncodeSample(rows []SampleRow) ([]byte, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[SampleRow](&buf)
	if _, err := w.Write(rows); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Sample is a small, hand-written log: two sessions and a session-less row, out of time
// order in the file, with one cancelled request (output 0).
func Sample() []SampleRow {
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	return []SampleRow{
		{TimestampStartUnixMs: 1767225600123, Prompt: "You are a helpful assistant.\nUser: hi", InputTokens: 1834, OutputTokens: 212,
			TotalHashes: []int64{9811, 9812, 9813}, BlockSize: i64(512), ProvidedSessionID: str("sess-42"), DurationE2EMs: i64(2310), RequestCanceled: i64(0)},
		{TimestampStartUnixMs: 1767225603000, Prompt: "second turn", InputTokens: 2100, OutputTokens: 0,
			TotalHashes: []int64{9811, 9812, 9813, 9814}, BlockSize: i64(512), ProvidedSessionID: str("sess-42"), RequestCanceled: i64(1)},
		{TimestampStartUnixMs: 1767225600000, Prompt: "earliest", InputTokens: 10, OutputTokens: 5},
		{TimestampStartUnixMs: 1767225601000, Prompt: "other session ünïcode", InputTokens: 20, OutputTokens: 7, ProvidedSessionID: str("s2")},
	}
}
