package inferencesim

import (
	"errors"
	"net"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/pacer"
	"github.com/lensfn/lensfn/runtime/sockpeek"
)

// Noticing that a client left. fasthttp has no close notification, and a
// request that waits (in the queue, for its TTFT, for a non-streamed
// answer's last token) would otherwise keep its slot, its memory and its
// place in the metrics long after the client is gone. A watcher goroutine
// peeks at the idle connection (MSG_PEEK, so a pipelined next request is
// left where it is) and closes gone on EOF or a reset, as net/http's
// background read does (runtime/sockpeek's Wait). It starts only for a
// wait longer than watchAfter, so zero-latency traffic never pays for it.

// watchAfter is the shortest wait worth a watcher.
const watchAfter = 20 * time.Millisecond

var errClientGone = errors.New("client closed the connection")

// clientWatch is one request's watcher; the zero value watches nothing.
type clientWatch struct {
	conn    net.Conn
	gone    chan struct{} // closed when the client has gone
	done    chan struct{} // closed when the watcher goroutine has returned
	started bool
}

// watch records the connection; nothing runs until wait needs it. Under
// TLS the TCP stream is watched: a FIN or reset is seen; a client that sends
// close_notify first looks alive (data is pending) and is noticed at the
// next write instead.
func (w *clientWatch) watch(c net.Conn) { *w = clientWatch{conn: c} }

// goneCh starts the watcher if needed and returns the channel closed when
// the client leaves (nil, never closed, when the connection cannot be
// watched: no socket, or no peek on this system).
func (w *clientWatch) goneCh() <-chan struct{} {
	if w.conn == nil {
		return nil
	}
	if !w.started {
		peek := sockpeek.New(w.conn)
		if peek == nil {
			w.conn = nil
			return nil
		}
		w.started = true
		w.gone, w.done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(w.done)
			// Pending (a pipelined next request) is not a departure; a read
			// deadline (stop) interrupts the wait.
			if peek.Wait() == sockpeek.Closed {
				close(w.gone)
			}
		}()
	}
	return w.gone
}

// stop ends the watcher before the connection is used again: a past read
// deadline wakes it, then the deadline is cleared for fasthttp.
func (w *clientWatch) stop() {
	if w.started {
		_ = w.conn.SetReadDeadline(time.Unix(1, 0))
		<-w.done
		_ = w.conn.SetReadDeadline(time.Time{})
	}
	*w = clientWatch{}
}

// waitUntil waits for the monotonic deadline t like the pacer, and
// reports false as soon as the client leaves instead.
func (g *genCtx) waitUntil(t time.Duration) bool {
	if rem := t - pacer.Now(); rem > watchAfter {
		if gone := g.watch.goneCh(); gone != nil {
			// The pacer takes over for the last few milliseconds, so the
			// deadline keeps its precision.
			timer := time.NewTimer(rem - 5*time.Millisecond)
			select {
			case <-gone:
				timer.Stop()
				return false
			case <-timer.C:
			}
		}
	}
	g.r.sim.pacer.WaitUntil(t)
	return true
}
