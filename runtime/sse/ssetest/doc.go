// Package ssetest is what tests of an event stream share: open a stream over HTTP (resuming
// after a Last-Event-ID) and take its events one by one with a deadline.
//
// It may import runtime/sse.
package ssetest
