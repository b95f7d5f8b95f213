package predict

import (
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/workload"
)

// Schedule is the benchmark runner's request schedule (runtime/workload's types).
type Schedule interface {
	Len() int
	Load(i int, r *loadgen.Request) error
}

// Domains keep the keys of hash blocks, tails and fresh prompts apart, as the load
// generator's word streams are.
const (
	domainBlock uint64 = 0x1b873593
	domainTail  uint64 = 0xcc9e2d51 << 24
)

// Arrivals turns an open-loop schedule into the engine's arrivals, with each prompt's block
// hashes for blockSize-token blocks. Closed-loop schedules (no arrival times) are refused.
func Arrivals(s Schedule, blockSize int) ([]enginemodel.Arrival, error) {
	n := s.Len()
	out := make([]enginemodel.Arrival, n)
	var r loadgen.Request
	var segs []enginemodel.Segment
	for i := 0; i < n; i++ {
		if err := s.Load(i, &r); err != nil {
			return nil, fmt.Errorf("request %d: %v", i, err)
		}
		if r.ArrivalMs == nil {
			return nil, errors.New("the predictor takes open-loop workloads (rate stages); closed-loop concurrency stages are not predicted")
		}
		if r.Prompt != nil || len(r.Messages) > 0 || r.SessionID != "" {
			return nil, errors.New("the predictor takes synthesised single-turn prompts; literal prompts and multi-turn sessions are not predicted")
		}
		segs = promptSegments(segs[:0], i, &r)
		stage, _ := r.Metadata["stage"].(int)
		out[i] = enginemodel.Arrival{At: *r.ArrivalMs / 1000, PromptTokens: r.InputTokens, OutputTokens: r.OutputTokens, Stage: stage,
			BlockHashes: enginemodel.PromptBlocks(nil, segs, blockSize)}
	}
	return out, nil
}

// promptSegments mirrors the load generator's synthesised prompt: the hash ids' blocks, cut to
// InputTokens, then a tail from the request's word stream (its TailKey's, else its own).
func promptSegments(segs []enginemodel.Segment, i int, r *loadgen.Request) []enginemodel.Segment {
	have := 0
	if r.BlockSize > 0 {
		for _, id := range r.HashIDs {
			if have >= r.InputTokens {
				break
			}
			take := min(r.BlockSize, r.InputTokens-have)
			segs = append(segs, enginemodel.Segment{Key: uint64(id)*0x9e3779b1 ^ domainBlock<<32 ^ uint64(r.BlockSize), Tokens: take})
			have += take
		}
	}
	if have < r.InputTokens {
		stream := uint64(i) << 1
		if r.TailKey != 0 {
			stream = r.TailKey<<1 | 1
		}
		segs = append(segs, enginemodel.Segment{Key: stream ^ domainTail, Tokens: r.InputTokens - have})
	}
	return segs
}

// Run is a prediction of one workload.
type Run struct {
	Prediction *enginemodel.Prediction
	Stages     []events.RateStage
	// Replicas is how many engines shared the load; Counters are theirs summed.
	Replicas int
}

// Options shape a prediction beyond the engine.
type Options struct {
	// Timeout (seconds, 0: none) fails requests as a client's timeout would.
	Timeout float64
	// Replicas spreads the requests over this many identical engines in turn, as a
	// round-robin router does (0 or 1: one engine).
	Replicas int
}

// SharedPrefix predicts a shared-prefix workload on the resolved engine, with the benchmark
// runner's schedule for seed.
func SharedPrefix(sp *events.SharedPrefix, seed uint64, eng *enginemodel.Resolved, opt Options) (*Run, error) {
	if err := checkSize(sp.Stages); err != nil {
		return nil, err
	}
	return Predict(workload.NewSharedPrefix(sp, seed), sp.Stages, eng, opt)
}

// Named predicts a named workload's rate stages; without a timeout of its own, requests time
// out as the workload's do.
func Named(w evalrun.Workload, seed uint64, eng *enginemodel.Resolved, opt Options) (*Run, error) {
	if len(w.Stages) == 0 {
		return nil, fmt.Errorf("workload %s runs closed-loop concurrency stages; the predictor takes rate stages", w.Name)
	}
	if opt.Timeout == 0 {
		opt.Timeout = w.RequestTimeout
	}
	if err := checkSize(w.Stages); err != nil {
		return nil, err
	}
	return Predict(workload.NewNamed(w, seed), w.Stages, eng, opt)
}

// MaxRequests bounds one prediction (about 200 bytes a request while it runs): the expected
// arrivals of the rate stages, before any is drawn.
const MaxRequests = 5_000_000

func checkSize(stages []events.RateStage) error {
	expected := 0.0
	for _, st := range stages {
		expected += st.Rate * st.Duration
	}
	if expected > MaxRequests {
		return fmt.Errorf("the workload's stages send about %.0f requests; a prediction takes at most %d", expected, MaxRequests)
	}
	return nil
}

// MaxReplicas bounds Options.Replicas.
const MaxReplicas = 1024

// Predict runs schedule s (its rate stages are stages) on the resolved engine.
func Predict(s Schedule, stages []events.RateStage, eng *enginemodel.Resolved, opt Options) (*Run, error) {
	arrivals, err := Arrivals(s, eng.Engine.BlockSize)
	if err != nil {
		return nil, err
	}
	replicas := max(opt.Replicas, 1)
	if replicas > MaxReplicas {
		return nil, fmt.Errorf("replicas must be between 1 and %d, got %d", MaxReplicas, replicas)
	}
	eo := enginemodel.Options{Engine: eng.Engine, Cost: eng.Cost, RequestOverhead: eng.Cost.RequestOverhead(), Timeout: opt.Timeout}
	if replicas == 1 {
		p, err := enginemodel.Predict(arrivals, eo)
		if err != nil {
			return nil, err
		}
		return &Run{Prediction: p, Stages: stages, Replicas: 1}, nil
	}
	// Round robin: replica r gets requests r, r+N, ...; each is its own engine.
	merged := &enginemodel.Prediction{Outcomes: make([]enginemodel.Outcome, len(arrivals))}
	for r := 0; r < replicas; r++ {
		var part []enginemodel.Arrival
		for i := r; i < len(arrivals); i += replicas {
			part = append(part, arrivals[i])
		}
		p, err := enginemodel.Predict(part, eo)
		if err != nil {
			return nil, err
		}
		for k := range part {
			merged.Outcomes[r+k*replicas] = p.Outcomes[k]
		}
		merged.Counters.Add(p.Counters)
		merged.End = max(merged.End, p.End)
	}
	return &Run{Prediction: merged, Stages: stages, Replicas: replicas}, nil
}

// Stage summarises stage k.
func (r *Run) Stage(k int) enginemodel.Summary {
	return r.Prediction.Summarize(func(o *enginemodel.Outcome) bool { return o.Stage == k })
}

// Overloaded is the ground truth's rule: more than 10 % of requests failed or the mean TTFT
// exceeded 10 s.
func Overloaded(s enginemodel.Summary) bool {
	return s.Requests > 0 && (float64(s.Failed) > 0.1*float64(s.Requests) || s.TTFTMean > 10_000)
}
