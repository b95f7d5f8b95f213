// Package security reproduces, over the local stack as real processes on loopback, each finding
// of the "safe to expose" review and checks it stays fixed: tokens and scopes, browser attacks
// (Host, Origin, Content-Type), body and number bounds, keys that must not travel or leak,
// artifact paths a tampered record cannot redirect, the endpoint policy, the ingress's honest
// answers, Redis's password, private files and loopback-only listeners.
//
// Like everything under tests/, it may import anything in the module.
package security
