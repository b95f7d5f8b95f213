// Package sse owns the Server-Sent Events side of progress streams: it writes events from a
// Source (a cursor-addressed feed such as a record's progress stream in the state store) to an
// HTTP response, resuming after the client's Last-Event-ID, sending heartbeats while the feed is
// idle, and closing with a final event when the source says the subject is finished. Every
// connection is bounded in lifetime and in the events it sends, so one client cannot hold a
// process. Simulation tasks, benchmark runs and evaluations all stream through it.
//
// ServeProgress is the HTTP side: cursor, a bounded slot per connection, problems for bad
// requests.
//
// An open stream asks every second whether the credential it was opened with still holds
// (auth.Recheck, set by runtime/fn) and ends with an "error" event once its token is revoked.
//
// It may import runtime/state, runtime/problem and runtime/auth.
package sse
