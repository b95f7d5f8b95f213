package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/secret"
)

// Name is the function's name.
const Name = "console"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// maxFormBytes bounds a form the console accepts (a benchmark or evaluation spec as JSON text
// is the largest).
const maxFormBytes = 256 << 10

// Console serves the pages.
type Console struct {
	deps     fn.Deps
	api      *apiClient
	sessions *sessions
	pages    map[string]*template.Template
	authOn   bool
	watchers chan struct{}
	logins   *prometheus.CounterVec
}

// maxWatchers bounds the live streams one instance relays at once.
const maxWatchers = 128

// Build is the function's fn.Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	c, err := New(d)
	if err != nil {
		return nil, err
	}
	return &fn.Function{Routes: c.Routes()}, nil
}

// Settings are the console's own, read from the environment at start (fn.Config.ReadSettings).
type Settings struct {
	// APIURL is the ingress the console calls the APIs through with the user's token
	// (LENS_API_URL, an http(s) base URL such as http://127.0.0.1:8080; required).
	APIURL string `env:"LENS_API_URL"`
	// CookieSecure marks the session cookie Secure (LENS_COOKIE_SECURE; the local stack, plain
	// HTTP on loopback, sets false).
	CookieSecure bool `env:"LENS_COOKIE_SECURE" envDefault:"true"`
}

// Validate normalises LENS_API_URL and refuses one that is not a plain http(s) base URL.
func (s *Settings) Validate() error {
	if s.APIURL = strings.TrimRight(strings.TrimSpace(s.APIURL), "/"); s.APIURL != "" {
		u, err := url.Parse(s.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			shown := s.APIURL
			if err != nil || u.User != nil || u.RawQuery != "" {
				// Credentials or a token in the URL must not reach the start-up log.
				shown = "(not shown: it may carry credentials)"
				if err == nil {
					u.User, u.RawQuery = nil, ""
					shown = u.Redacted() + " (credentials and query removed)"
				}
			}
			return fmt.Errorf("LENS_API_URL %q is not an http(s) base URL without credentials or query", shown)
		}
	}
	return nil
}

// New builds the console from its dependencies.
func New(d fn.Deps) (*Console, error) {
	var settings Settings
	if err := d.Config.ReadSettings(&settings); err != nil {
		return nil, err
	}
	if settings.APIURL == "" {
		return nil, errors.New("LENS_API_URL is not set: the console calls the APIs through the ingress at that URL")
	}
	sealer, err := secret.FromEnv(d.Config.SecretKey.Reveal())
	if err != nil {
		return nil, err
	}
	if sealer == nil {
		// Without the shared key a session only opens on the instance that sealed it and
		// only until it restarts; say so rather than fail the local stack without a key.
		d.Log.Warnw("LENS_SECRET_KEY is not set: console sessions are sealed with a key of this process and end when it restarts")
		key, _ := secret.ParseKey(secret.NewKey())
		if sealer, err = secret.New(key); err != nil {
			return nil, err
		}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	api, err := newAPIClient(settings.APIURL, d.Metrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("LENS_API_URL: %w", err)
	}
	c := &Console{deps: d, api: api,
		sessions: &sessions{sealer: sealer, secure: settings.CookieSecure, now: time.Now},
		pages:    pages, authOn: d.Config.Auth != fn.AuthOff, watchers: make(chan struct{}, maxWatchers),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_console_logins_total",
			Help: "Console sign-ins, by outcome (ok, invalid, unavailable)."}, []string{"outcome"})}
	d.Metrics.Registry.MustRegister(c.logins)
	return c, nil
}

// Routes is the console's route table: every route a Page (see the package doc's scope rules).
func (c *Console) Routes() []fn.Route {
	page := func(method, p string, h handler, query ...string) fn.Route {
		return fn.Route{Method: method, Path: p, Scope: auth.Public, Page: true, Handler: c.wrap(h, method == http.MethodPost, p == "/login"),
			MaxBodyBytes: maxFormBytes, Query: query}
	}
	return []fn.Route{
		{Method: "GET", Path: "/static/{file}", Scope: auth.Public, Page: true, Handler: http.HandlerFunc(serveStatic)},
		page("GET", "/{$}", c.home),
		page("GET", "/login", c.loginPage, "next"),
		page("POST", "/login", c.login),
		page("POST", "/logout", c.logout),
		page("GET", "/datasets", c.listPage("datasets", "Trace datasets", simAPI+"/trace-datasets", "datasets")),
		page("GET", "/datasets/{name}", c.dataset, "bins"),
		page("POST", "/datasets/{name}/download", c.downloadDataset),
		page("GET", "/tasks", c.tasks, "status"),
		page("GET", "/tasks/new", c.newTask, "dataset"),
		page("POST", "/tasks", c.createTask),
		page("GET", "/tasks/{id}", c.task),
		page("GET", "/tasks/{id}/events", c.taskEvents),
		page("GET", "/tasks/{id}/report", c.taskReport),
		page("POST", "/tasks/{id}/stop", c.taskAction("stop")),
		page("POST", "/tasks/{id}/rerun", c.taskAction("rerun")),
		page("POST", "/tasks/{id}/delete", c.taskAction("delete")),
		page("GET", "/compare", c.compare, "a", "b"),
		page("GET", "/runs", c.listPage("runs", "Benchmark runs", evalAPI+"/runs", "items")),
		page("GET", "/runs/new", c.newRun),
		page("POST", "/runs", c.createRun),
		page("GET", "/runs/{id}", c.run),
		page("GET", "/runs/{id}/events", c.runEvents),
		page("GET", "/runs/{id}/report", c.runReport),
		page("POST", "/runs/{id}/cancel", c.runAction("cancel")),
		page("POST", "/runs/{id}/delete", c.runAction("delete")),
		page("GET", "/evaluations", c.listPage("evaluations", "Evaluations", evalAPI+"/workflow-runs", "items")),
		page("GET", "/evaluations/new", c.newEvaluation),
		page("POST", "/evaluations", c.createEvaluation),
		page("GET", "/evaluations/{id}", c.evaluation),
		page("GET", "/evaluations/{id}/report", c.evaluationReport),
		page("POST", "/evaluations/{id}/cancel", c.evaluationAction("cancel")),
		page("POST", "/evaluations/{id}/retry", c.evaluationAction("retry")),
		page("POST", "/evaluations/{id}/delete", c.evaluationAction("delete")),
		page("POST", "/evaluations/{id}/cases/{case}/cancel", c.evaluationAction("cancel-case")),
		page("GET", "/inventory", c.inventory),
	}
}

// request is what a page handler gets besides the HTTP pair.
type request struct {
	sess *session
	// scopes the signed-in token carries; nil with auth off (everything is offered).
	scopes []auth.Scope
}

// token is the bearer token for the APIs ("" with auth off).
func (q *request) token() string { return q.sess.Token }

type handler func(w http.ResponseWriter, r *http.Request, q *request) error

// wrap gives every page its session: a new anonymous one when the browser has none (it
// carries the CSRF token), a sign-in redirect when auth is on and the session holds no
// valid token, and a CSRF check on every POST.
func (c *Console) wrap(h handler, post, loginRoute bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		sess := c.sessions.read(r)
		if sess == nil {
			if post {
				// A POST without a session cannot carry its CSRF token: the session ended.
				c.fail(w, r, &request{sess: newSession(time.Now())}, http.StatusForbidden, "Session expired",
					"this form belongs to a session that ended; reload the page and submit again")
				return
			}
			sess = newSession(time.Now())
			c.sessions.write(w, sess)
		}
		q := &request{sess: sess}
		if post {
			if err := r.ParseForm(); err != nil {
				c.fail(w, r, q, http.StatusBadRequest, "Unreadable form", err.Error())
				return
			}
			submitted := r.PostForm.Get("csrf")
			if submitted == "" {
				submitted = r.Header.Get("X-CSRF-Token")
			}
			if !csrfMatches(sess, submitted) {
				c.fail(w, r, q, http.StatusForbidden, "Form rejected", "the form's CSRF token does not match this session; reload the page and submit again")
				return
			}
		}
		if c.authOn && !loginRoute {
			if sess.Token == "" {
				c.toLogin(w, r, "")
				return
			}
			tok, err := c.deps.Tokens.Verify(r.Context(), sess.Token)
			if errors.Is(err, auth.ErrInvalid) {
				sess.Token = ""
				c.sessions.write(w, sess)
				c.toLogin(w, r, "expired")
				return
			}
			if err != nil {
				c.fail(w, r, q, http.StatusServiceUnavailable, "Token store unavailable", "the console cannot check your token right now; try again shortly")
				return
			}
			q.scopes = tok.Scopes
		}
		if err := h(w, r, q); err != nil {
			if e, ok := asAPIError(err); ok {
				c.fail(w, r, q, e.Status, e.Title, e.Detail)
				return
			}
			c.deps.Log.Errorw("console page failed", "path", r.URL.Path, "error", err)
			c.fail(w, r, q, http.StatusInternalServerError, "Console error", "the page could not be built; the console's log has the cause")
		}
	})
}

// toLogin redirects a page to the sign-in page, remembering where it was going (GET pages only).
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request, reason string) {
	v := url.Values{}
	if r.Method == http.MethodGet {
		v.Set("next", r.URL.RequestURI())
	}
	target := "/login"
	if len(v) > 0 {
		target += "?" + v.Encode()
	}
	_ = reason
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// localPath keeps a redirect target on the console: a path, never another host. Browsers drop
// tabs and newlines from a URL and read a backslash as a slash, so "/\t/evil.example" and
// "/\\evil.example" would leave as "//evil.example": any control character or backslash sends
// the user home instead, and what remains must parse as a path without scheme or host.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "/"
	}
	return next
}

// view is what every template gets.
type view struct {
	Title   string
	Nav     string
	CSRF    string
	AuthOn  bool
	Signed  bool
	Scopes  string
	Flash   string
	Data    any
	Problem *apiError
}

func (c *Console) render(w http.ResponseWriter, status int, q *request, name string, v view) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	v.CSRF = q.sess.CSRF
	v.AuthOn = c.authOn
	v.Signed = q.sess.Token != ""
	if q.scopes != nil {
		v.Scopes = auth.JoinScopes(q.scopes)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.deps.Log.Errorw("console template failed", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w)
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// setPageHeaders: the pages load only their own script and styles, and frame only the
// console's own report pages.
func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "+
		"img-src 'self' data:; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
}

// fail renders an error page.
func (c *Console) fail(w http.ResponseWriter, _ *http.Request, q *request, status int, title, detail string) {
	if status < 400 {
		status = http.StatusBadGateway
	}
	c.render(w, status, q, "error", view{Title: title, Problem: &apiError{Status: status, Title: title, Detail: detail}})
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"num": num, "pct": pct, "percent": percent, "str": str, "get": get, "has": has, "dur": dur, "short": short, "shortID": shortID, "final": func(v any) bool { return terminal(str(v)) }}
	layout, err := fs.ReadFile(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		body, err := fs.ReadFile(templateFS, f)
		if err != nil {
			return nil, err
		}
		t, err := template.New(name).Funcs(funcs).Parse(string(layout))
		if err == nil {
			_, err = t.Parse(string(body))
		}
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", f, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// serveStatic serves the embedded script and stylesheet.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	raw, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(raw)
}
