// Package auth owns API tokens: the scopes a route may require, tokens made of a public id and a
// random secret, stored in the state store only as the secret's SHA-256 (a token cannot be read
// back, only verified), created, listed and revoked by an operator, and an optional bootstrap
// token given as a hash from a Kubernetes Secret.
//
// The HTTP side (the Authorization header, 401 and 403) lives in runtime/fn, which checks each
// route's Scope. It imports runtime/state and the standard library only.
package auth
