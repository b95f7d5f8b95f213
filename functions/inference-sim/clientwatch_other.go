//go:build !linux

package inferencesim

import "net"

// peekClosed: disconnects are noticed at the next write only.
func peekClosed(net.Conn) bool { return false }
