package wekatest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Request is one recorded request: its start t and server time, in seconds.
type Request struct {
	T, APITime float64
	In, Out    int
}

// End is when the request ended in the recording.
func (r Request) End() float64 { return r.T + r.APITime }

// Subagent is a subagent marker with its requests (times absolute on the trace's clock).
type Subagent struct {
	ID string
	// AfterTurn is the parent turn the marker follows in the file (the turn that spawns it).
	AfterTurn int
	T         float64
	Requests  []Request
	// Background: no parent turn follows it, so nothing joins it.
	Background bool
}

// End is when the subagent ended in the recording: its last request's end.
func (s Subagent) End() float64 {
	end := s.T
	for _, r := range s.Requests {
		end = max(end, r.End())
	}
	return end
}

// Trace is one generated agent session.
type Trace struct {
	ID        string
	Turns     []Request
	Subagents []Subagent
}

// End is when the trace's last request ended.
func (t Trace) End() float64 {
	end := 0.0
	for _, r := range t.Turns {
		end = max(end, r.End())
	}
	for _, s := range t.Subagents {
		end = max(end, s.End())
	}
	return end
}

// APITime is the recorded server time of every generated request (seconds).
const APITime = 0.05

// Agents generates n traces spanning about span seconds each. Every trace has six parent turns;
// turn 1 spawns three subagents started at different offsets, which turn 2 joins; turn 3 spawns
// one that turn 4 joins; turn 5, the last, spawns a background subagent. Traces differ a little
// in their offsets, so they do not move in lockstep.
func Agents(n int, span float64) []Trace {
	u := span / 20 // the shape below spans 20 units
	req := func(t float64, k int) Request { return Request{T: t, APITime: APITime, In: 128 + 64*k, Out: 2} }
	out := make([]Trace, n)
	for i := range out {
		f := 1 + 0.05*float64(i) // stretch later traces a little
		at := func(x float64) float64 { return x * u * f * 0.97 }
		tr := Trace{ID: fmt.Sprintf("gen_%03d", i)}
		for k, x := range []float64{0, 2, 10, 12, 15, 17} {
			tr.Turns = append(tr.Turns, req(at(x), k))
		}
		sub := func(id string, after int, bg bool, xs ...float64) {
			s := Subagent{ID: id, AfterTurn: after, T: at(xs[0]), Background: bg}
			for k, x := range xs {
				s.Requests = append(s.Requests, req(at(x), k))
			}
			tr.Subagents = append(tr.Subagents, s)
		}
		sub("agent_a", 1, false, 2.5, 3.5)
		sub("agent_b", 1, false, 5, 6)
		sub("agent_c", 1, false, 7.5, 8.5)
		sub("agent_d", 3, false, 12.6, 13.4)
		sub("agent_e", 5, true, 17.6, 18.6, 19.6)
		out[i] = tr
	}
	return out
}

// JSONL encodes traces as WEKA trace objects, one per line (the HuggingFace corpora's shape).
func JSONL(traces []Trace) []byte {
	var buf bytes.Buffer
	for _, t := range traces {
		raw, err := json.Marshal(wekaTrace(t))
		if err != nil {
			panic(err) // only maps, slices and numbers: cannot fail
		}
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func wekaRequest(r Request, model string, ids *int64) map[string]any {
	hashes := make([]int64, r.In/64)
	for k := range hashes {
		*ids++
		hashes[k] = *ids
	}
	return map[string]any{"t": r.T, "type": "n", "model": model, "in": r.In, "out": r.Out, "hash_ids": hashes,
		"api_time": r.APITime, "input_types": []string{"text"}, "output_types": []string{"text"}}
}

func wekaTrace(t Trace) map[string]any {
	var ids int64
	var requests []any
	for k, turn := range t.Turns {
		requests = append(requests, wekaRequest(turn, "big", &ids))
		for _, s := range t.Subagents {
			if s.AfterTurn != k {
				continue
			}
			inner := make([]any, len(s.Requests))
			for j, r := range s.Requests {
				inner[j] = wekaRequest(r, "small", &ids)
			}
			requests = append(requests, map[string]any{"t": s.T, "type": "subagent", "agent_id": s.ID,
				"subagent_type": "Explore", "status": "completed", "duration_ms": (s.End() - s.T) * 1000,
				"models": []string{"small"}, "requests": inner})
		}
	}
	return map[string]any{"id": t.ID, "models": []string{"big", "small"}, "block_size": 64, "hash_id_scope": "local",
		"tool_tokens": 0, "system_tokens": 0, "requests": requests}
}
