package loadgen

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Sink receives each request's Record as the request completes. Run calls Record from one
// goroutine at a time, so an implementation needs no locking of its own against Run. An error
// stops the run: Run cancels everything and returns it.
type Sink interface {
	Record(Record) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Record) error

// Record calls f.
func (f SinkFunc) Record(r Record) error { return f(r) }

// JSONLWriter writes records as JSON lines through a buffer, so memory stays flat however many
// requests a run has. It flushes when the buffer fills, when a record arrives more than
// FlushEvery after the last flush (so a file being watched stays current), and on Flush/Close.
// It is safe for concurrent use.
type JSONLWriter struct {
	// FlushEvery is the longest a written record waits in the buffer while records keep
	// arriving; 0 means 1 s.
	FlushEvery time.Duration

	mu        sync.Mutex
	w         *bufio.Writer
	enc       *json.Encoder
	line      []byte // appendRecordLine's buffer, reused line after line
	lastFlush time.Time
	n         int64
	closer    io.Closer
}

// NewJSONLWriter writes to w; Close also closes w when it is an io.Closer.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	bw := bufio.NewWriterSize(w, 256<<10)
	j := &JSONLWriter{w: bw, enc: json.NewEncoder(bw), lastFlush: time.Now()}
	j.enc.SetEscapeHTML(false)
	if c, ok := w.(io.Closer); ok {
		j.closer = c
	}
	return j
}

// Record writes one line.
func (j *JSONLWriter) Record(r Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if line, ok := appendRecordLine(j.line[:0], &r); ok {
		j.line = line
		if _, err := j.w.Write(line); err != nil {
			return err
		}
	} else if err := j.enc.Encode(r); err != nil {
		return err
	}
	if cap(j.line) > 64<<10 {
		j.line = nil // one long record does not pin its buffer for the rest of the run
	}
	j.n++
	every := j.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	if now := time.Now(); now.Sub(j.lastFlush) >= every {
		j.lastFlush = now
		return j.w.Flush()
	}
	return nil
}

// Count is the number of records written so far.
func (j *JSONLWriter) Count() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

// Flush writes buffered lines out.
func (j *JSONLWriter) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastFlush = time.Now()
	return j.w.Flush()
}

// Close flushes and closes the underlying writer when it can be closed.
func (j *JSONLWriter) Close() error {
	err := j.Flush()
	if j.closer != nil {
		if cerr := j.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Progress is a run's live counters, safe to read from any goroutine while Run updates them.
// Run resets them when it starts.
type Progress struct {
	scheduled  atomic.Int64
	sent       atomic.Int64
	successful atomic.Int64
	failed     atomic.Int64
	notSent    atomic.Int64
	outputTok  atomic.Int64
}

// ProgressSnapshot is one reading of the counters. Completed is always Successful + Failed and
// InFlight never negative; fields read one after another may be a few requests apart.
type ProgressSnapshot struct {
	Scheduled    int64 `json:"scheduled"`  // requests in the schedule
	Sent         int64 `json:"sent"`       // requests put on the wire
	Completed    int64 `json:"completed"`  // requests with a record (successful + failed)
	Successful   int64 `json:"successful"` // 2xx, complete, no error
	Failed       int64 `json:"failed"`     // everything else that was sent
	InFlight     int64 `json:"in_flight"`  // sent - completed
	NotSent      int64 `json:"not_sent"`   // when the run ends: released after the duration, or a stop
	OutputTokens int64 `json:"output_tokens"`
}

// reset starts the counters of a new run.
func (p *Progress) reset(scheduled int64) {
	for _, c := range []*atomic.Int64{&p.sent, &p.successful, &p.failed, &p.notSent, &p.outputTok} {
		c.Store(0)
	}
	p.scheduled.Store(scheduled)
}

// Snapshot reads the counters.
func (p *Progress) Snapshot() ProgressSnapshot {
	s := ProgressSnapshot{
		Scheduled:    p.scheduled.Load(),
		Successful:   p.successful.Load(),
		Failed:       p.failed.Load(),
		NotSent:      p.notSent.Load(),
		OutputTokens: p.outputTok.Load(),
	}
	s.Completed = s.Successful + s.Failed
	s.Sent = p.sent.Load() // after the completions: a request is sent before it completes
	s.InFlight = s.Sent - s.Completed
	return s
}
