//go:build !unix || aix

package sockpeek

import (
	"errors"
	"net"
)

// Peeker looks at one connection's socket; this system has no non-blocking peek, so New
// returns none.
type Peeker struct{}

// New returns nil: no connection can be looked at on this system.
func New(net.Conn) *Peeker { return nil }

// Now, Wait and Err exist so that callers build everywhere; New never returns a Peeker here.
func (*Peeker) Now() State  { return Interrupted }
func (*Peeker) Wait() State { return Interrupted }
func (*Peeker) Err() error  { return errors.ErrUnsupported }
