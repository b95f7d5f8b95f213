package sockpeek

// State is what a look at a socket found.
type State uint8

const (
	// Idle: nothing to read; the peer has neither closed the connection nor sent anything.
	Idle State = iota
	// Pending: bytes are waiting to be read (the peer may have closed after them).
	Pending
	// Closed: the peer closed the connection (Err is io.EOF) or the socket failed (Err is the
	// errno, ECONNRESET for a reset).
	Closed
	// Interrupted: the poller ended the call before the socket was looked at or became
	// readable: a read deadline passed (Err is os.ErrDeadlineExceeded) or this side closed the
	// connection (net.ErrClosed).
	Interrupted
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Pending:
		return "pending"
	case Closed:
		return "closed"
	case Interrupted:
		return "interrupted"
	}
	return "unknown state"
}
