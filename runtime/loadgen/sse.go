package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// sseReader reads Server-Sent Events incrementally, one event's data at a time, so a token is
// timed when its chunk arrives rather than when the response ends. It follows the SSE rules
// that matter for OpenAI streams: "data:" lines (one optional space after the colon) are joined
// with newlines, a blank line ends an event, ":" lines are comments, other fields are ignored,
// and lines may end in \n, \r\n or \r.
type sseReader struct {
	r       lineSource
	pooled  *bufio.Reader // r when it came from the pool
	data    []byte
	hasData bool
	line    []byte
	maxLine int
	// pendingCR: the previous line ended in \r, so a leading \n belongs to it.
	pendingCR bool
}

// errSSELineTooLong guards memory against a server that never ends a line.
var errSSELineTooLong = errors.New("sse: line longer than the limit")

// readers recycles the buffered readers of finished streams: a replay opens thousands of
// streams a second and a fresh buffer each time is garbage the collector must clear.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// lineSource is what the reader scans: a bufio.Reader, or the lean client's response body,
// which offers the same over its connection's buffer, so a stream is read with no second one.
type lineSource interface {
	Buffered() int
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// sseReaders recycles the readers themselves with their line and data buffers, which every
// stream would otherwise grow afresh (three or four allocations a request).
var sseReaders = sync.Pool{New: func() any { return new(sseReader) }}

// maxPooledSSEBuffer bounds the buffers a pooled reader keeps: one long event does not pin its
// memory for the rest of the run.
const maxPooledSSEBuffer = 16 << 10

func newSSEReader(r io.Reader, maxLine int) *sseReader {
	s := sseReaders.Get().(*sseReader)
	*s = sseReader{data: s.data[:0], line: s.line[:0], maxLine: maxLine}
	if src, ok := r.(lineSource); ok {
		s.r = src
		return s
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	s.r, s.pooled = br, br
	return s
}

// release returns the reader and its buffer to the pools; it must not be used afterwards, nor
// any slice it returned.
func (s *sseReader) release() {
	if s.pooled != nil {
		s.pooled.Reset(nil)
		readers.Put(s.pooled)
	}
	s.r, s.pooled = nil, nil
	if cap(s.data) > maxPooledSSEBuffer {
		s.data = nil
	}
	if cap(s.line) > maxPooledSSEBuffer {
		s.line = nil
	}
	sseReaders.Put(s)
}

// next returns the data of the next event that has any. The slice is valid until the next
// call. At the end of the stream it returns io.EOF; a final event without its blank line is
// still delivered first.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	s.hasData = false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.hasData {
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
}

// readLine returns one line without its terminator; the slice is reused by the next call. It
// scans the buffered bytes for a terminator instead of reading byte by byte.
func (s *sseReader) readLine() ([]byte, error) {
	long := s.line[:0]
	defer func() { s.line = long[:0] }()
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if err == io.EOF && len(long) > 0 {
					return long, nil
				}
				return nil, err
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.pendingCR {
			s.pendingCR = false
			if buf[0] == '\n' {
				_, _ = s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(long)+len(buf) > s.maxLine {
				return nil, errSSELineTooLong
			}
			long = append(long, buf...)
			_, _ = s.r.Discard(len(buf))
			continue
		}
		if len(long)+i > s.maxLine {
			return nil, errSSELineTooLong
		}
		long = append(long, buf[:i]...)
		s.pendingCR = buf[i] == '\r'
		_, _ = s.r.Discard(i + 1)
		return long, nil
	}
}
