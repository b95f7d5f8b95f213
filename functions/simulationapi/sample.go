package simulationapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// SampleDatasetName is the dataset Lensfn generates itself, so a first replay needs no download.
const SampleDatasetName = "lensfn-sample-chat"

// Shape of the generated sample: a minute of chat traffic in multi-turn sessions.
const (
	sampleSessions     = 24
	sampleSpanMs       = 60_000
	sampleBlockTokens  = 512 // the Mooncake format's hash block size
	sampleSystemBlocks = 2   // hash ids 0 and 1: the system prompt every session starts with
	sampleDocuments    = 3   // shared "documents" of 2 blocks each, quoted by some sessions
)

// sampleTrace is the generated trace's bytes and digest, computed once: the generator is
// deterministic, so every instance writes the same file and the digest pins it like a download.
var sampleTrace, sampleSHA256 = func() ([]byte, string) {
	raw := GenerateSampleTrace()
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:])
}()

func sampleDataset() Dataset {
	return Dataset{Name: SampleDatasetName, Filename: "lensfn_sample_chat.jsonl", Scenario: "chat", TraceFormat: "mooncake_trace",
		License: "Apache-2.0", SourceRepository: "",
		Description: fmt.Sprintf("A minute of chat traffic Lensfn generates itself (no download): %d multi-turn sessions in the "+
			"Mooncake format, every session opening with the same 2-block system prompt and some quoting shared documents, "+
			"so prompts share prefixes (hash_ids) a prefix cache can reuse.", sampleSessions),
		Files:    []DatasetFile{{Name: "lensfn_sample_chat.jsonl", SHA256: sampleSHA256}},
		Generate: func() []byte { return sampleTrace }}
}

// splitmix64 is a tiny generator whose sequence is fixed by its definition, so the sample's
// bytes never change with the Go version (math/rand's streams may).
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// between returns an integer in [lo, hi].
func (s *splitmix64) between(lo, hi int) int { return lo + int(s.next()%uint64(hi-lo+1)) }

type sampleRequest struct {
	timestampMs, session, input, output int
	hashIDs                             []int
}

// GenerateSampleTrace writes the sample dataset: Mooncake JSONL, one request a line in
// timestamp order, sessions named by session_id. Each turn's hash_ids are the blocks it adds
// (the replayer resends a session's earlier turns in front of them), so later turns extend the
// prefix of earlier ones; first turns share the system prompt's blocks and some a document's.
func GenerateSampleTrace() []byte {
	rng := splitmix64(20261201)
	nextBlock := sampleSystemBlocks + 2*sampleDocuments
	var reqs []sampleRequest
	for session := range sampleSessions {
		at := rng.between(0, sampleSpanMs*3/4)
		turns := rng.between(2, 5)
		for turn := range turns {
			var ids []int
			if turn == 0 {
				for b := range sampleSystemBlocks {
					ids = append(ids, b)
				}
				if doc := rng.between(0, sampleDocuments); doc < sampleDocuments { // a quarter quote nothing
					first := sampleSystemBlocks + 2*doc
					ids = append(ids, first, first+1)
				}
			}
			for range rng.between(1, 3) { // the user's new message
				ids = append(ids, nextBlock)
				nextBlock++
			}
			input := (len(ids)-1)*sampleBlockTokens + rng.between(32, sampleBlockTokens)
			reqs = append(reqs, sampleRequest{timestampMs: at, session: session, input: input,
				output: rng.between(16, 160), hashIDs: ids})
			at += rng.between(2_000, 8_000) // the user reads and types
			if at >= sampleSpanMs {
				break
			}
		}
	}
	slices.SortStableFunc(reqs, func(a, b sampleRequest) int { return a.timestampMs - b.timestampMs })
	var buf bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&buf, `{"timestamp":%d,"session_id":"session-%02d","input_length":%d,"output_length":%d,"hash_ids":[`,
			r.timestampMs, r.session, r.input, r.output)
		for i, id := range r.hashIDs {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprint(&buf, id)
		}
		buf.WriteString("]}\n")
	}
	return buf.Bytes()
}
