package fn

import (
	"context"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/problem"
)

// Route is one entry of a function's route table. The runtime builds the mux from the table and
// answers everything the table implies before Handler runs: the bearer token and its Scope, the
// Host and Origin checks, a JSON Content-Type on bodies, the body limit (413), and 404 or 405
// with Allow for requests that match no entry.
type Route struct {
	Method string // GET, POST, DELETE... (a GET route answers HEAD too)
	Path   string // a net/http ServeMux path pattern, e.g. /api/simulation/tasks/{id}
	// Scope is what the caller's token must carry; auth.Public needs none (probes only).
	Scope   auth.Scope
	Handler http.Handler
	// MaxBodyBytes caps the request body; 0 is DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Query lists the query parameters the route accepts. The runtime answers any other with a
	// 422 naming it, so a misspelt filter (?stauts=running) is an error instead of being
	// ignored; nil accepts none. Public GET routes (probes, /metrics) are not checked.
	Query []string
	// Page marks a route a browser navigates to (the console's pages and forms), which
	// authenticates its caller itself (a session cookie): its Scope is auth.Public, yet the
	// runtime checks Host and Origin on every method, a GET included, and accepts an HTML form
	// body (application/x-www-form-urlencoded) besides JSON, still bounded by MaxBodyBytes.
	Page bool
}

// DefaultMaxBodyBytes is a route's body limit unless it sets its own.
const DefaultMaxBodyBytes = 1 << 20

// Caller returns the token a request was authenticated with (false on a public route or with
// LENS_AUTH=off).
func Caller(ctx context.Context) (auth.Token, bool) {
	t, ok := ctx.Value(callerKey{}).(auth.Token)
	return t, ok
}

type callerKey struct{}

type bodyLimitKey struct{}

// bodyLimit is the body limit of the route serving ctx.
func bodyLimit(ctx context.Context) int64 {
	if n, ok := ctx.Value(bodyLimitKey{}).(int64); ok {
		return n
	}
	return DefaultMaxBodyBytes
}

// router serves a route table: ServeMux matches, and requests it would answer with its own
// text/plain 404 or 405 get problem+json instead.
type router struct {
	mux     *http.ServeMux
	methods []string
}

// guard is what the runtime checks before a route's handler.
type guard struct {
	cfg    Config
	tokens *auth.Tokens
}

func newRouter(g *guard, routes []Route) (*router, error) {
	rt := &router{mux: http.NewServeMux()}
	for _, r := range routes {
		if r.Method == "" || !strings.HasPrefix(r.Path, "/") || r.Handler == nil {
			return nil, errors.New("fn: a route needs a method, a path starting with / and a handler")
		}
		if err := register(rt.mux, r.Method+" "+r.Path, g.wrap(r)); err != nil {
			return nil, err
		}
		if !slices.Contains(rt.methods, r.Method) {
			rt.methods = append(rt.methods, r.Method)
		}
		if r.Method == http.MethodGet && !slices.Contains(rt.methods, http.MethodHead) {
			rt.methods = append(rt.methods, http.MethodHead)
		}
	}
	return rt, nil
}

// register turns ServeMux's panic on a conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("fn: route " + pattern + ": " + strings.TrimPrefix(toString(p), "http: "))
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "invalid pattern"
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := rt.mux.Handler(r); pattern == "" {
		if allow := rt.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			problem.Write(w, r, problem.New(problem.CodeMethod, "%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		problem.Write(w, r, problem.New(problem.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
		return
	}
	rt.mux.ServeHTTP(w, r)
}

// allowed lists the methods the table serves on r's path.
func (rt *router) allowed(r *http.Request) []string {
	var out []string
	for _, m := range rt.methods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := rt.mux.Handler(probe); pattern != "" {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// wrap puts the runtime's checks in front of a route's handler.
func (g *guard) wrap(route Route) http.Handler {
	limit := route.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	// Read-only public routes (probes, /metrics) are asked by kubelet and Prometheus under
	// whatever Host they use; every other route is a browser's target and is checked.
	checkBrowser := route.Scope != auth.Public || route.Method != http.MethodGet || route.Page
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if checkBrowser {
			if err := g.checkHostAndOrigin(r); err != nil {
				problem.Write(w, r, err)
				return
			}
		}
		if route.Scope != auth.Public && g.cfg.Auth != AuthOff {
			tok, err := g.authenticate(r, route.Scope)
			if err != nil {
				var ae *authError
				if errors.As(err, &ae) {
					w.Header().Set("WWW-Authenticate", ae.challenge)
				}
				problem.Write(w, r, err)
				return
			}
			ctx := context.WithValue(r.Context(), callerKey{}, tok)
			// A long-lived answer (an event stream) asks again and ends once the token is revoked.
			header, scope := r.Header.Get("Authorization"), route.Scope
			r = r.WithContext(auth.WithRecheck(ctx, func(ctx context.Context) error { return g.recheck(ctx, header, scope) }))
		}
		if checkBrowser {
			if err := checkQuery(r, route.Query); err != nil {
				problem.Write(w, r, err)
				return
			}
		}
		if err := checkBody(r, limit, route.Page); err != nil {
			problem.Write(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		r = r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, limit))
		route.Handler.ServeHTTP(w, r)
	})
}

// checkQuery refuses query parameters the route does not declare, naming each of them and what
// the route accepts.
func checkQuery(r *http.Request, allowed []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return problem.Validation(problem.Field("the query string is malformed: "+err.Error(), "query_invalid", "query"))
	}
	accepts := "this route takes no query parameters"
	if len(allowed) > 0 {
		accepts = "this route accepts " + strings.Join(allowed, ", ")
	}
	var errs []problem.FieldError
	for name := range q {
		if !slices.Contains(allowed, name) {
			errs = append(errs, problem.Field("unknown query parameter; "+accepts, "extra_forbidden", "query", name))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b problem.FieldError) int {
		return strings.Compare(strings.Join(a.Location, "."), strings.Join(b.Location, "."))
	})
	return problem.Validation(errs...)
}

// checkBody refuses a body over the limit by its declared length, and a body that is not JSON:
// a form or text/plain POST is what a hostile page can send without CORS. A Page route takes
// forms too: it checks its own CSRF token, and Origin was checked before.
func checkBody(r *http.Request, limit int64, forms bool) error {
	if r.ContentLength > limit {
		return problem.New(problem.CodeTooLarge, "the request body exceeds %d bytes", limit)
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if forms && isFormMediaType(ct) {
		return nil
	}
	if !IsJSONMediaType(ct) {
		return problem.New(problem.CodeUnsupportedMT, "request bodies must be application/json (got %q)", ct)
	}
	return nil
}

// IsJSONMediaType says whether a Content-Type is application/json or a +json type.
func IsJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func isFormMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// authError is a 401 or 403 with the WWW-Authenticate challenge that goes with it.
type authError struct {
	err       *problem.Error
	challenge string
}

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

func (g *guard) authenticate(r *http.Request, scope auth.Scope) (auth.Token, error) {
	const realm = `Bearer realm="lensfn"`
	header := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(header, " ")
	if header == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return auth.Token{}, &authError{problem.New(problem.CodeUnauthorized,
			"this route needs a token with scope %s: send Authorization: Bearer <token>", scope), realm}
	}
	tok, err := g.tokens.Verify(r.Context(), strings.TrimSpace(secret))
	if errors.Is(err, auth.ErrInvalid) {
		return auth.Token{}, &authError{problem.New(problem.CodeUnauthorized, "the bearer token is not valid (unknown, revoked or malformed)"),
			realm + `, error="invalid_token"`}
	}
	if err != nil {
		return auth.Token{}, problem.Wrap(problem.CodeUnavailable, err, "")
	}
	if !tok.Allows(scope) {
		return auth.Token{}, &authError{problem.New(problem.CodeForbidden, "the token does not carry scope %s (it carries %s)", scope, auth.JoinScopes(tok.Scopes)),
			realm + `, error="insufficient_scope", scope="` + string(scope) + `"`}
	}
	return tok, nil
}

// recheck verifies an Authorization header again: auth.ErrInvalid once its token is revoked or
// lost scope, a store error as it is.
func (g *guard) recheck(ctx context.Context, header string, scope auth.Scope) error {
	_, secret, _ := strings.Cut(header, " ")
	tok, err := g.tokens.Verify(ctx, strings.TrimSpace(secret))
	if err != nil {
		return err
	}
	if !tok.Allows(scope) {
		return auth.ErrInvalid
	}
	return nil
}

// checkHostAndOrigin defends the API against pages in a browser: a Host outside
// LENS_ALLOWED_HOSTS is DNS rebinding, an Origin that is neither the Host nor allowed is a
// cross-site request.
func (g *guard) checkHostAndOrigin(r *http.Request) error {
	host := hostOnly(r.Host)
	if len(g.cfg.AllowedHosts) > 0 && !g.hostAllowed(host) {
		return problem.New(problem.CodeForbidden, "host %q is not served here (LENS_ALLOWED_HOSTS)", host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if slices.Contains(g.cfg.AllowedOrigins, origin) {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return problem.New(problem.CodeForbidden, "cross-origin requests from %q are not allowed", origin)
	}
	if strings.EqualFold(u.Host, r.Host) && (len(g.cfg.AllowedHosts) == 0 || g.hostAllowed(hostOnly(u.Host))) {
		return nil
	}
	return problem.New(problem.CodeForbidden, "cross-origin requests from %q are not allowed (LENS_ALLOWED_ORIGINS)", origin)
}

func (g *guard) hostAllowed(host string) bool {
	for _, h := range g.cfg.AllowedHosts {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			return true
		}
	}
	return false
}

// hostOnly drops the port and IPv6 brackets of a Host header.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}
