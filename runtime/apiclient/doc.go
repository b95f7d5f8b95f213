// Package apiclient owns the one JSON client of Lensfn's own APIs that people's tools use
// (functions/console, deploy/lensctl): a bearer token per call, a JSON request body, a bounded
// read of the JSON answer, problem+json answers decoded into *Error (validation details as field
// errors), and redirects followed only to the host the client was given, so a token never
// follows a request to another host.
//
// It imports only the standard library.
package apiclient
