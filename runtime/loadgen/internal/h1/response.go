package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Response is a response whose header has been read; Body reads the rest.
type Response struct {
	StatusCode  int
	ContentType string
	// Location is a redirect's target (the header as sent); the client does not follow it.
	Location string
	// Close: the server said Connection: close (or spoke HTTP/1.0 without keep-alive), or the
	// body runs to the connection's end; the connection is not reused.
	Close bool
	// Body reads the body (chunked encoding removed). Close it when done: a body read to its
	// end puts the connection back in the pool, one closed early closes it. Read and Close are
	// not safe for concurrent use; to give up on a slow body, SetReadDeadline.
	Body *Body

	body Body
}

// Bounds on a response's head: it is read from a server we do not control.
const (
	maxHeaderLines = 128
	maxHeaderBytes = 64 << 10
)

// ProtocolError is a response the client cannot read as HTTP/1.1.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return e.msg }

func protocolError(format string, args ...any) error {
	return &ProtocolError{msg: fmt.Sprintf(format, args...)}
}

// quote shows at most 80 bytes of a bad line.
func quote(line []byte) string {
	if len(line) > 80 {
		return strconv.Quote(string(line[:80])) + "..."
	}
	return strconv.Quote(string(line))
}

// readLine returns one line without its CRLF (or LF); the slice is only valid until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, protocolError("response line longer than %d bytes", br.Size())
	}
	if err != nil {
		if err == io.EOF {
			if len(line) == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// errClosedBeforeResponse: the server closed the connection without a byte of response.
var errClosedBeforeResponse = errors.New("h1: the server closed the connection before responding")

// readHead reads the status line and headers into resp and sets up its body.
func readHead(br *bufio.Reader, resp *Response) error {
	total := 0
	var proto1_0 bool
	for { // 1xx responses (100 Continue) precede the real one
		line, err := readLine(br)
		if err != nil {
			if err == io.EOF {
				return errClosedBeforeResponse
			}
			return err
		}
		total += len(line)
		code, minor, ok := parseStatusLine(line)
		if !ok {
			return protocolError("malformed HTTP status line %s", quote(line))
		}
		proto1_0 = minor == 0
		if code >= 200 {
			resp.StatusCode = code
			break
		}
		if code == 101 {
			return protocolError("unexpected 101 Switching Protocols")
		}
		// Skip the 1xx's headers.
		for {
			line, err := readLine(br)
			if err != nil {
				return headErr(err)
			}
			if total += len(line); total > maxHeaderBytes {
				return protocolError("response header larger than %d bytes", maxHeaderBytes)
			}
			if len(line) == 0 {
				break
			}
		}
	}
	length := int64(-1)
	chunked, keepAlive := false, false
	resp.Close = proto1_0
	for n := 0; ; n++ {
		line, err := readLine(br)
		if err != nil {
			return headErr(err)
		}
		if len(line) == 0 {
			break
		}
		if total += len(line); total > maxHeaderBytes || n >= maxHeaderLines {
			return protocolError("response header larger than %d bytes or %d lines", maxHeaderBytes, maxHeaderLines)
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validToken(string(line[:colon])) {
			return protocolError("malformed HTTP header line %s", quote(line))
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			v, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || v < 0 || (length >= 0 && v != length) {
				return protocolError("bad Content-Length %s", quote(value))
			}
			length = v
		case equalFold(name, "transfer-encoding"):
			if !equalFold(value, "chunked") {
				return protocolError("unsupported Transfer-Encoding %s", quote(value))
			}
			chunked = true
		case equalFold(name, "connection"):
			for _, tok := range bytes.Split(value, []byte{','}) {
				tok = bytes.TrimSpace(tok)
				if equalFold(tok, "close") {
					resp.Close = true
				} else if equalFold(tok, "keep-alive") {
					keepAlive = true
				}
			}
		case equalFold(name, "content-type"):
			resp.ContentType = contentType(value)
		case equalFold(name, "location"):
			resp.Location = string(value)
		}
	}
	if proto1_0 && keepAlive && !chunked && length >= 0 {
		resp.Close = false
	}
	b := &resp.body
	b.br = br
	switch {
	case resp.StatusCode == 204 || resp.StatusCode == 304:
		b.done = true
	case chunked:
		b.chunked = true
	case length >= 0:
		b.remaining = length
		b.done = length == 0
	default: // the body runs until the server closes the connection
		b.remaining = -1
		resp.Close = true
	}
	b.reuse = !resp.Close
	return nil
}

// contentType is value as a string, without an allocation for the types a streaming
// endpoint sends on every response.
func contentType(value []byte) string {
	switch string(value) { // compared in place, not converted
	case "text/event-stream":
		return "text/event-stream"
	case "text/event-stream; charset=utf-8":
		return "text/event-stream; charset=utf-8"
	case "application/json":
		return "application/json"
	case "application/json; charset=utf-8":
		return "application/json; charset=utf-8"
	}
	return string(value)
}

func headErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseStatusLine reads "HTTP/1.x NNN[ reason]".
func parseStatusLine(line []byte) (code, minor int, ok bool) {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return 0, 0, false
	}
	if line[7] != '0' && line[7] != '1' {
		return 0, 0, false
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, 0, false
		}
		code = code*10 + int(d-'0')
	}
	if code < 100 {
		return 0, 0, false
	}
	return code, int(line[7] - '0'), true
}

func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// Body is a response body read from the connection's buffered reader. Besides Read it offers
// Buffered, Peek and Discard over the body's bytes (framing removed) as bufio.Reader does, so
// an SSE reader can scan lines in the connection's own buffer without a second one.
type Body struct {
	cn     *conn
	client *Client
	key    string
	watch  watch // what ends the request early: its context's hook or its group
	br     *bufio.Reader
	// deadline is the request's own (Group.Do; zero: none), which SetReadDeadline keeps.
	deadline time.Time

	chunked    bool  // Transfer-Encoding: chunked
	chunkLeft  int64 // bytes left of the current chunk
	afterChunk bool  // a chunk's data was read: its CRLF comes before the next size line
	remaining  int64 // bytes left of a Content-Length body; -1: until EOF
	done       bool  // read to its end cleanly
	reuse      bool  // the connection may serve another request once done
	failed     bool  // a read failed: the connection is out of step
	closed     bool
}

// errClosedBody: Read after Close.
var errClosedBody = errors.New("h1: read on a closed body")

// available is how many body bytes are buffered (0 at the end, or before a chunk boundary that
// prepare has not crossed yet).
func (b *Body) available() int {
	n := int64(b.br.Buffered())
	switch {
	case b.done:
		return 0
	case b.chunked:
		n = min(n, b.chunkLeft)
	case b.remaining >= 0:
		n = min(n, b.remaining)
	}
	return int(n)
}

// prepare makes the next body bytes readable: it crosses a chunk boundary when one is due. At
// the body's end it returns io.EOF.
func (b *Body) prepare() error {
	if b.closed {
		return errClosedBody
	}
	if b.chunked && !b.done && b.chunkLeft == 0 {
		if err := b.nextChunk(); err != nil {
			b.failed = true
			return err
		}
	}
	if b.done {
		return io.EOF
	}
	return nil
}

// nextChunk reads the CRLF after the previous chunk and the next chunk's size line; a last
// chunk (size 0) is followed by trailers, which are read and dropped.
func (b *Body) nextChunk() error {
	if b.afterChunk {
		line, err := readLine(b.br)
		if err != nil {
			return headErr(err)
		}
		if len(line) != 0 {
			return protocolError("chunk data not followed by CRLF")
		}
		b.afterChunk = false
	}
	line, err := readLine(b.br)
	if err != nil {
		return headErr(err)
	}
	size, ok := parseChunkSize(line)
	if !ok {
		return protocolError("malformed chunk size line %s", quote(line))
	}
	if size == 0 {
		if err := b.skipTrailers(); err != nil {
			return err
		}
		b.done = true
		return nil
	}
	b.chunkLeft, b.afterChunk = size, true
	return nil
}

// parseChunkSize reads "hex[;extensions]" (at most 15 digits: a chunk under 2^60 bytes).
func parseChunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}

// consumed accounts for n body bytes taken from the buffer.
func (b *Body) consumed(n int) {
	switch {
	case b.chunked:
		b.chunkLeft -= int64(n)
	case b.remaining >= 0:
		b.remaining -= int64(n)
		b.done = b.remaining == 0
	}
}

// Read reads the body; it returns io.EOF at its end.
func (b *Body) Read(p []byte) (int, error) {
	if err := b.prepare(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.chunked {
		p = p[:min(int64(len(p)), b.chunkLeft)]
	} else if b.remaining >= 0 {
		p = p[:min(int64(len(p)), b.remaining)]
	}
	n, err := b.br.Read(p)
	b.consumed(n)
	switch {
	case err == io.EOF && !b.chunked && b.remaining < 0:
		b.done = true // the body ran to the connection's close
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		b.failed = true
	}
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// Buffered is how many body bytes Peek can return without reading the connection.
func (b *Body) Buffered() int { return b.available() }

// Peek returns the next n body bytes (fewer when the body or its current chunk holds fewer),
// reading the connection when they are not buffered; io.EOF at the body's end.
func (b *Body) Peek(n int) ([]byte, error) {
	if err := b.prepare(); err != nil {
		return nil, err
	}
	if b.chunked {
		n = int(min(int64(n), b.chunkLeft))
	} else if b.remaining >= 0 {
		n = int(min(int64(n), b.remaining))
	}
	buf, err := b.br.Peek(n)
	switch {
	case err == io.EOF && len(buf) == 0 && !b.chunked && b.remaining < 0:
		b.done = true
		return nil, io.EOF
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if len(buf) > 0 && err != io.ErrUnexpectedEOF {
			return buf, nil // fewer than asked, as the buffer holds
		}
		b.failed = true
	}
	return buf, err
}

// Discard skips n buffered body bytes (n <= Buffered()).
func (b *Body) Discard(n int) (int, error) {
	if n > b.available() {
		return 0, errors.New("h1: discard beyond the buffered body")
	}
	d, err := b.br.Discard(n)
	b.consumed(d)
	return d, err
}

// skipTrailers reads what follows a chunked body's last chunk: trailer lines and a blank line.
func (b *Body) skipTrailers() error {
	for total := 0; ; {
		line, err := readLine(b.br)
		if err != nil {
			return headErr(err)
		}
		if len(line) == 0 {
			return nil
		}
		if total += len(line); total > maxHeaderBytes {
			return protocolError("trailers larger than %d bytes", maxHeaderBytes)
		}
	}
}

// SetReadDeadline bounds the reads of the rest of the body (the connection is not reused
// when the deadline fails a read). It never extends the request's own deadline (Group.Do),
// and a request its group already ended keeps failing at once.
func (b *Body) SetReadDeadline(t time.Time) error {
	if !b.deadline.IsZero() && (t.IsZero() || t.After(b.deadline)) {
		t = b.deadline
	}
	if b.watch.group != nil {
		return b.watch.group.setReadDeadline(b.cn, t)
	}
	return b.cn.nc.SetReadDeadline(t)
}

// Close ends the response: a body read to its end puts the connection back in the pool; any
// other closes it, as does a request whose context ended.
func (b *Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	notEnded := b.watch.end(b.cn) // false: the request's end came, the deadline is in the past
	if b.done && b.reuse && !b.failed && notEnded {
		b.client.put(b.key, b.cn)
	} else {
		b.cn.close()
	}
	return nil
}

var _ io.ReadCloser = (*Body)(nil)
