package render

import (
	"bytes"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
)

// API is the wire format a chat request is answered in.
type API int

const (
	Completions API = iota // chat and text completions
	Responses              // the Responses API
)

// Observer receives a value (the inter-token latency metric).
type Observer interface{ Observe(float64) }

// Stream is a streamed answer being written: the frames rendered and not yet read, and
// where the stream stands. Emit renders every event that is due; Copy hands frames out
// whole. The zero value is ready for the Completions API.
type Stream struct {
	api    API
	out    []byte
	off    int
	events events // the Responses API's sequence numbers
	done   bool   // the last frame is rendered: the stream reached its end
	// head is the chunk head of the stream's request (appendChunkHead), rendered at its
	// first token chunk: the id, model, object and creation time do not change in a stream.
	head []byte
}

// Reset readies s for a new stream in api, keeping its buffer (within keep bytes).
func (s *Stream) Reset(api API, keep int) {
	out := s.out[:0]
	if cap(out) > keep {
		out = nil
	}
	head := s.head[:0]
	if cap(head) > keep {
		head = nil
	}
	*s = Stream{api: api, out: out, head: head}
}

// Pending reports whether rendered frames wait to be read.
func (s *Stream) Pending() bool { return s.off < len(s.out) }

// Take hands out every rendered frame at once and empties the buffer; the slice is valid
// until the next Emit.
func (s *Stream) Take() []byte {
	out := s.out[s.off:]
	s.out, s.off = s.out[:0], 0
	return out
}

// Done reports whether the stream has rendered its last frame (else, when it is closed,
// the client left first).
func (s *Stream) Done() bool { return s.done }

// Copy copies as many whole SSE frames as fit into p and empties the buffer once all are
// read, so no event is split across HTTP chunks (line-oriented clients that read the raw
// chunked stream rely on that); only a frame larger than p is split.
func (s *Stream) Copy(p []byte) int {
	rest := s.out[s.off:]
	if len(rest) > len(p) {
		if i := bytes.LastIndex(rest[:len(p)], sseFrameEnd); i > 0 {
			rest = rest[:i+len(sseFrameEnd)]
		}
	}
	n := copy(p, rest)
	s.off += n
	if s.off == len(s.out) {
		s.out, s.off = s.out[:0], 0
	}
	return n
}

var sseFrameEnd = []byte("\n\n")

// Emit renders every event of r due at now (up to limits.StreamBatchBytes), observing each
// inter-token gap in itl, and the stream's end once every sequence has finished.
func (s *Stream) Emit(r *engine.Request, now time.Duration, itl Observer) {
	for i := range r.Seqs {
		seq := &r.Seqs[i]
		for seq.Due(now) && len(s.out) < limits.StreamBatchBytes {
			if r.Kind == engine.Chat && !seq.RoleSent {
				if s.api == Responses {
					s.out = s.events.opening(s.out, r, seq)
				} else {
					s.out = appendRoleChunk(s.out, r, seq)
				}
				seq.RoleSent = true
			}
			if seq.TokenPending() {
				if gap, first := seq.Sending(now); !first {
					itl.Observe(gap.Seconds())
				}
				switch {
				case s.api == Responses:
					s.out = s.events.delta(s.out, r, seq.Tokens[seq.Next])
				case seq.ToolOfToken != nil:
					s.out = appendToolCallChunk(s.out, r, seq, seq.Next)
				default:
					if len(s.head) == 0 {
						s.head = appendChunkHead(s.head, r)
					}
					s.out = appendTokenChunk(s.out, s.head, r, seq, seq.Tokens[seq.Next])
				}
				seq.Sent()
				continue
			}
			seq.Close(now)
			if s.api == Responses {
				s.out = s.events.closing(s.out, r, seq)
			} else {
				s.out = appendFinishChunk(s.out, r, seq)
			}
		}
	}
	if _, ok := r.NextDeadline(); !ok {
		s.Finish(r)
	}
}

// Finish renders the stream's end: the usage chunk when the request asked for it and
// [DONE] (the Responses API ends with response.completed instead).
func (s *Stream) Finish(r *engine.Request) {
	if s.done {
		return
	}
	if s.api != Responses {
		if r.Params.IncludeUsage {
			s.out = appendUsageChunk(s.out, r)
		}
		s.out = appendDone(s.out)
	}
	s.done = true
}
