package simulationapi_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
)

// sampleDigest pins the generated sample: a change to the generator changes every replay of
// it, so it must be deliberate (update the digest with it).
const sampleDigest = "6f3b676e8c0dd2789977f04c7ec47c021d1762fbc3e707f1b8b646a4e99c0611"

// The sample is deterministic Mooncake JSONL in timestamp order over about a minute, with
// multi-turn sessions and hash ids shared between requests (the system prompt in every first
// turn, documents in some), so a replay of it exercises sessions and prefix reuse.
func TestTheSampleTraceIsDeterministicWithSessionsAndSharedPrefixes(t *testing.T) {
	raw := simulationapi.GenerateSampleTrace()
	if !bytes.Equal(raw, simulationapi.GenerateSampleTrace()) {
		t.Fatal("the generator is not deterministic")
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != sampleDigest {
		t.Fatalf("the sample changed: sha256 %x", sum)
	}
	type line struct {
		Timestamp    int    `json:"timestamp"`
		SessionID    string `json:"session_id"`
		InputLength  int    `json:"input_length"`
		OutputLength int    `json:"output_length"`
		HashIDs      []int  `json:"hash_ids"`
	}
	turns, seen := map[string]int{}, map[int]int{}
	last, requests := -1, 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var l line
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %d: %v", requests+1, err)
		}
		requests++
		if l.Timestamp < last || l.Timestamp >= 60_000 {
			t.Fatalf("line %d: timestamp %d after %d", requests, l.Timestamp, last)
		}
		last = l.Timestamp
		if blocks := len(l.HashIDs); l.InputLength <= (blocks-1)*512 || l.InputLength > blocks*512 || l.OutputLength < 1 {
			t.Fatalf("line %d: %d input tokens for %d blocks", requests, l.InputLength, blocks)
		}
		turns[l.SessionID]++
		for _, id := range l.HashIDs {
			seen[id]++
		}
	}
	multi := 0
	for _, n := range turns {
		if n > 1 {
			multi++
		}
	}
	if requests < 50 || len(turns) != 24 || multi < 20 || seen[0] != 24 || seen[1] != 24 {
		t.Fatalf("%d requests, %d sessions (%d multi-turn), system prompt in %d first turns", requests, len(turns), multi, seen[0])
	}
	shared := 0
	for id := 2; id < 8; id++ {
		shared += seen[id]
	}
	if shared < 10 {
		t.Fatalf("documents quoted %d times", shared)
	}
}

// Out of the box the sample is listed as downloaded, its file in the data dir, with no network;
// downloading it again reuses it, and a deleted file is generated again.
func TestTheSampleIsThereOutOfTheBox(t *testing.T) {
	h := newHarness(t, map[string]string{"LENS_DATASET_MIRROR": "http://127.0.0.1:1"}) // nothing to fetch from
	var out struct {
		Datasets []simulationapi.DatasetView `json:"datasets"`
	}
	call(t, "GET", h.url+"/api/simulation/trace-datasets", "", &out)
	var sample *simulationapi.DatasetView
	for i := range out.Datasets {
		if out.Datasets[i].Name == simulationapi.SampleDatasetName {
			sample = &out.Datasets[i]
		}
	}
	if sample == nil || !sample.Downloaded || sample.SHA256 != sampleDigest || sample.TraceFormat != "mooncake_trace" || sample.Scenario != "chat" {
		t.Fatalf("sample entry %+v", sample)
	}
	var res simulationapi.DownloadResult
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"lensfn-sample-chat"}`, &res); code != 200 ||
		res.Transferred || res.Source != "reused" {
		t.Fatalf("%d %+v", code, res)
	}
	if err := os.Remove(filepath.Join(h.dataDir, "datasets", "lensfn_sample_chat.jsonl")); err != nil {
		t.Fatal(err)
	}
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"lensfn-sample-chat"}`, &res); code != 200 ||
		!res.Transferred || res.Source != "generated" || res.SizeBytes != int64(len(simulationapi.GenerateSampleTrace())) {
		t.Fatalf("%d %+v", code, res)
	}
	var meta map[string]any
	raw, _ := os.ReadFile(filepath.Join(h.dataDir, res.MetadataPath)) // paths are relative to the data dir
	if json.Unmarshal(raw, &meta) != nil || meta["fetched_from"] != "generated" || meta["sha256"] != sampleDigest {
		t.Fatalf("metadata %s", raw)
	}
}
