package inferencesim

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// Direct writes: in engine mode, once a stream's headers and first chunk are out, its
// goroutine parks and the rank's loop writes the stream's token chunks to the socket itself,
// at the step that produced them, instead of waking the goroutine for every token (the
// hand-off, a channel send, a park and a schedule, was a tenth of the simulator's CPU with
// 16 ranks streaming). The goroutine gets the stream back for its last token (the finish
// chunk, [DONE] and the chunked body's end are fasthttp's), and whenever the loop cannot write
// at once: the loop never waits for a client.
//
// Ownership of the stream's request and render state moves with engineTicket.mode:
//
//	streamOwned  the goroutine runs and owns them; the loop wakes it per token
//	streamParked the goroutine is parked in awaitDirect and owns nothing; the loop may take them
//	streamLoop   the loop owns them and writes; it hands them back by storing streamOwned and waking
//
// Only the goroutine moves streamOwned to streamParked and streamParked back; only the loop
// moves streamParked to streamLoop and streamLoop to streamOwned. The atomics order each
// side's writes before the other's reads.
const (
	streamOwned int32 = iota
	streamParked
	streamLoop
)

// directWriter is what the loop needs to write a stream: the raw socket (plain TCP only: a
// TLS record cannot be written around crypto/tls), and what it leaves for the goroutine when
// it hands the stream back.
type directWriter struct {
	conn net.Conn
	raw  syscall.RawConn
	// flushed: fasthttp has sent the headers and a chunk (the goroutine returned bytes from
	// Read, and fasthttp flushes each chunk before reading again), so the connection's buffer
	// is empty and raw chunks follow in order.
	flushed bool
	// off: the stream fell back to its goroutine (a full socket) and stays there.
	off bool
	// rest is the end of a chunk the socket did not take; err a write that failed (the client
	// left). Both are the goroutine's to act on after the hand-back.
	rest []byte
	err  error

	// frame, written and werr are writeFrame's argument and results (a method value made once
	// per stream, so a write allocates nothing).
	frame   []byte
	written int
	werr    error
	write   func(fd uintptr)
}

// attach readies w for the stream on c; a connection that is not plain TCP gets no direct
// writes.
func (w *directWriter) attach(c net.Conn) {
	*w = directWriter{rest: w.rest[:0]}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	w.conn, w.raw = c, raw
	w.write = w.writeFrame
}

// writeFrame is one non-blocking write(2) of w.frame (never empty: a chunk has its head): the socket is non-blocking (Go's
// poller), so a full socket answers EAGAIN at once instead of parking the loop. It runs under
// RawConn.Control, which keeps the descriptor open while it runs; the stream's goroutine, the
// only other writer, is parked while the loop owns the stream, so no write lock is needed. The
// call is a raw system call: it never blocks, so the scheduler need not hand the P over.
func (w *directWriter) writeFrame(fd uintptr) {
	w.written, w.werr = 0, nil
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.frame[0])), uintptr(len(w.frame)))
	if errno != 0 {
		w.werr = errno
		return
	}
	w.written = int(n)
}

// try writes frame once without waiting; whatever the socket did not take is kept in rest
// (false), and a failed write in err (false).
func (w *directWriter) try(frame []byte) bool {
	w.frame = frame
	err := w.raw.Control(w.write)
	w.frame = nil
	if err == nil {
		err = w.werr
	}
	switch {
	case err == nil && w.written == len(frame):
		return true
	case err == nil || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		w.rest = append(w.rest[:0], frame[w.written:]...)
		w.off = true
	default:
		w.err = err
	}
	return false
}

// appendChunk frames data as one HTTP/1.1 chunk, as fasthttp frames what Read returns.
func appendChunk(dst, data []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(data)), 16)
	dst = append(dst, '\r', '\n')
	dst = append(dst, data...)
	return append(dst, '\r', '\n')
}

// directEligible reports whether g's stream may be written by the loop from now on: a plain
// TCP connection attached (only a one-sequence stream gets one), headers out, and no
// fall-back yet.
func (g *genCtx) directEligible() bool {
	d := &g.dw
	return d.raw != nil && d.flushed && !d.off
}

// awaitDirect parks g's goroutine with its stream given to the loop until the loop hands it
// back (its last token, a full socket, a failed write) or wakes it without taking it. false:
// the client left.
func (g *genCtx) awaitDirect() bool {
	t := g.ticket
	t.mode.Store(streamParked)
	for {
		<-t.wake
		if t.mode.CompareAndSwap(streamParked, streamOwned) {
			return true // woken before the loop took the stream
		}
		if t.mode.Load() == streamOwned {
			break // handed back
		}
		// streamLoop: a wake sent before the loop took the stream; the hand-back sends another.
	}
	d := &g.dw
	if d.err != nil {
		return false
	}
	if len(d.rest) > 0 {
		// The socket was full: finish the chunk here, waiting for the client as any stream
		// does, and keep the stream on this goroutine.
		if _, err := d.conn.Write(d.rest); err != nil {
			return false
		}
		d.rest = d.rest[:0]
	}
	return true
}

// loopWrites is the loop's part in a stream that got a token at at: when the stream is the
// loop's, or its goroutine is parked and this is not the last token, the loop takes it and
// writes the token itself (true). Otherwise, or when the write cannot be made, or for the last
// token (the goroutine ends the stream), a stream the loop held goes back to its goroutine and
// the caller wakes it (false).
func (e *engineRank) loopWrites(t *engineTicket, last bool, at time.Duration) bool {
	mode := t.mode.Load()
	if mode == streamParked && !last && t.mode.CompareAndSwap(streamParked, streamLoop) {
		mode = streamLoop
	}
	if mode != streamLoop {
		return false
	}
	if !last && e.writeDirect(t, at) {
		return true
	}
	t.mode.Store(streamOwned)
	return false
}

// writeDirect is the loop's turn at a stream it owns: render what the engine produced by at
// and write it as one chunk. false: hand the stream back.
func (e *engineRank) writeDirect(t *engineTicket, at time.Duration) bool {
	g := t.direct
	if !t.sync(&g.req, at) {
		return true
	}
	g.req.Prompt.Cached = int(t.cached.Load())
	g.out.Emit(&g.req, at, g.mm.ITL)
	if !g.out.Pending() {
		return true
	}
	e.frame = appendChunk(e.frame[:0], g.out.Take())
	if !g.dw.try(e.frame) {
		if g.dw.off {
			e.directFallbacks.Add(1)
		}
		return false
	}
	e.directChunks.Add(1)
	return true
}
