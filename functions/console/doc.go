// Package console is the console function: the web console served at / on the ingress.
// Server-rendered pages (html/template, assets embedded, a small vanilla script, nothing from
// the network) over the existing APIs, which it calls over HTTP through the ingress
// (LENS_API_URL) with the signed-in user's token: trace datasets (list, download, timeline),
// simulation tasks (create, watch live over the task's event stream, results with the task's
// HTML report, stop, rerun, delete, compare two), benchmark runs (followed live over the run's
// event stream with its live summary; once final, the run's report: SLA verdict and margins,
// headline tiles, percentiles, charts, stages, its HTML report, the raw JSON), evaluations (workflow runs with their cases, comparison
// report and verdict; cancel a case or the evaluation, retry it, delete it, as the evaluation
// API allows and with its refusals shown), model services and deployments.
//
// Scope rules: every console route is an fn.Route with Page set and Scope auth.Public, so the
// runtime checks Host and Origin on every method and bounds every body, but asks for no bearer
// header: a browser navigating pages cannot send one. The console authenticates the browser
// itself. With LENS_AUTH=required a page needs a session holding a token the runtime's token
// store verifies (re-checked on every request, so a revoked token ends the session); the
// console then calls each API with that token, and the API's own route scopes decide what the
// user may read or do: a 403 from an API is shown as such on the page, never bypassed. With
// LENS_AUTH=off the console signs nobody in and calls the APIs without a token, as they expect.
//
// The session is a cookie (HttpOnly, SameSite=Strict, Secure unless LENS_COOKIE_SECURE=false)
// whose value is sealed with LENS_SECRET_KEY (runtime/secret): it holds the token, a session id
// and the session's CSRF token, which every form carries and every POST must match. The token
// is never logged, never written into a page and only ever sent to LENS_API_URL.
//
// It may import runtime/fn, runtime/auth, runtime/apiclient, runtime/report, runtime/secret and
// runtime/sse, and prometheus/client_golang; nothing imports it but its cmd and tests/.
package console
