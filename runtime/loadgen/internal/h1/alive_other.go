//go:build !unix

package h1

import "net"

// alive cannot peek without blocking here; a dead idle connection fails its next write, which
// Do retries once on a fresh connection.
func alive(net.Conn) bool { return true }
