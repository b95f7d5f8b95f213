package abi_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

func ptr[T any](v T) *T { return &v }

func TestRecordRoundTrip(t *testing.T) {
	cases := map[string]abi.TraceRequest{
		"empty": {},
		"mooncake line": {Line: 1, ArrivalMs: ptr(0.0), InputTokens: 6758, OutputTokens: 500,
			HashIDs: []int64{0, 1, 2}, BlockSize: 512, ContextMode: abi.ContextModeDeltas},
		"everything": {Line: 9, SessionID: "trace_0277/agent_001", TurnIndex: 3, DelayMs: ptr(12.5),
			RecordedMs: 79224, InputTokens: 11651, OutputTokens: 205, HashIDs: []int64{1448, -1},
			BlockSize: 64, Prompt: ptr(""), Messages: []byte(`[{"role":"user","content":"hi"}]`),
			Payload: []byte(`{}`), Extra: []byte(`{"ignore_eos":true}`), Tools: []byte(`[]`),
			Model: "claude-haiku", ContextMode: abi.ContextModeSelfContain, Metadata: []byte(`{"stop":"end_turn"}`),
			Subagent: &abi.SubagentLink{ParentSessionID: "trace_0277", AgentID: "agent_001",
				AgentType: "Explore", SpawnAfterTurn: 4, JoinBeforeTurn: -1}, JoinDelayMs: ptr(3.25)},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			buf := abi.AppendRecord(nil, &want)
			buf = abi.AppendRecord(buf, &want)
			var got []*abi.TraceRequest
			if err := abi.DecodeRecords(buf, func(r *abi.TraceRequest) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !reflect.DeepEqual(*got[0], want) || !reflect.DeepEqual(*got[1], want) {
				t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", got[0], want)
			}
		})
	}
}

// The worked example of ABI.md section "Record encoding".
func TestRecordWorkedExample(t *testing.T) {
	r := abi.TraceRequest{Line: 2, ArrivalMs: ptr(1.5), InputTokens: 7, HashIDs: []int64{3}}
	got := hex.EncodeToString(abi.AppendRecord(nil, &r))
	want := "28000000" + "01" + "0200000000000000" + "04" + "000000000000f83f" +
		"07" + "0700000000000000" + "09" + "01000000" + "0300000000000000"
	if got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
}

// The second worked example of ABI.md: a delay-driven turn of a session.
func TestRecordWorkedExampleSession(t *testing.T) {
	r := abi.TraceRequest{SessionID: "s1", TurnIndex: 1, DelayMs: ptr(250.0), InputTokens: 600, HashIDs: []int64{7, 8}, BlockSize: 512}
	got := hex.EncodeToString(abi.AppendRecord(nil, &r))
	want := "40000000" + "02" + "02000000" + "7331" + "03" + "0100000000000000" + "05" + "0000000000406f40" +
		"07" + "5802000000000000" + "09" + "02000000" + "0700000000000000" + "0800000000000000" + "0a" + "0002000000000000"
	if got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
}

func TestDecodeRejectsBadStreams(t *testing.T) {
	good := abi.AppendRecord(nil, &abi.TraceRequest{Line: 1, SessionID: "abc"})
	var r abi.TraceRequest
	for i := 1; i < len(good); i++ {
		if _, err := abi.DecodeRecord(good[:i], &r); !errors.Is(err, abi.ErrTruncated) {
			t.Fatalf("prefix of %d bytes: got %v, want ErrTruncated", i, err)
		}
	}
	bad := bytes.Clone(good)
	bad[4] = 200
	if _, err := abi.DecodeRecord(bad, &r); err == nil || !strings.Contains(err.Error(), "tag 200") {
		t.Fatalf("unknown tag: got %v", err)
	}
	lying := []byte{5, 0, 0, 0, abi.TagHashIDs, 0xff, 0xff, 0xff, 0x0f}
	if _, err := abi.DecodeRecord(lying, &r); !errors.Is(err, abi.ErrTruncated) {
		t.Fatalf("huge hash count: got %v", err)
	}
}

func TestPack(t *testing.T) {
	if v := abi.Pack(0x10000, 5); v != 0x0001000000000005 {
		t.Fatalf("Pack = %#x", v)
	}
	if v := abi.Pack(0x12340, 64); v != 320232761589824 {
		t.Fatalf("Pack = %d", v)
	}
	if abi.Failed != 0xFFFFFFFFFFFFFFFF {
		t.Fatal("Failed must be all ones (i64 -1)")
	}
	if p, n := abi.Unpack(0x0001000000000005); p != 0x10000 || n != 5 {
		t.Fatalf("Unpack = %#x %d", p, n)
	}
}

func TestParseDescriptor(t *testing.T) {
	d, err := abi.ParseDescriptor([]byte(`{"abi_version":2,"kind":"trace-parser","name":"x","version":"1.0.0","capabilities":{"supports_trace_range":true}}`))
	if err != nil || !d.Capabilities[abi.CapabilityTraceRange] || d.Capabilities[abi.CapabilityScaleFactor] {
		t.Fatalf("got %+v, %v", d, err)
	}
	for _, bad := range []string{`{`, `{"kind":"x","name":"n","version":"1"}`, `{"kind":"trace-parser","version":"1"}`, `{"kind":"trace-parser","name":"n"}`} {
		if _, err := abi.ParseDescriptor([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
