//go:build !unix

package redisstore

import (
	"errors"
	"net"
)

var errNoSocketCheck = errors.New("redisstore: no socket check")

// socketCheck cannot look at a socket here: the pool pings connections idle for a while instead.
type socketCheck struct{}

func newSocketCheck(net.Conn) *socketCheck { return nil }

func (*socketCheck) alive() error { return errNoSocketCheck }
