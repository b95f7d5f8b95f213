//go:build !unix

package redisstore

import (
	"errors"
	"net"
)

var errNoSocketCheck = errors.New("redisstore: no socket check")

// socketAlive cannot look at a socket here: the pool pings connections idle for a while instead.
func socketAlive(net.Conn) error { return errNoSocketCheck }
