// Package problem writes RFC 9457 problem+json error responses for the HTTP functions and owns
// the table that maps an error code to its HTTP status, title and retry meaning.
//
// Handlers return a *problem.Error (or wrap one); Write turns any error into a response whose
// 5xx detail is generic, never the internal message. It also owns request ids (X-Request-ID).
// It imports only the standard library.
package problem
