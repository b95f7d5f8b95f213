// Command genschema writes events/schemas/ from the event catalogue. Run it through
// `go generate ./events` after changing a payload struct; a test fails while a schema is stale.
//
// It imports events only.
package main
