package fn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/secret"
)

// Config is the platform contract of a function: the Knative variables, the state store, auth,
// the endpoint policy, the data, module and cache directories, logging, drain and shutdown, the
// listen host and the instance's identity. It is read once at start (LoadConfig) and never
// changed. A function's own settings are not here: each function declares its settings struct
// and reads it from the same environment with ReadSettings. Fields with an env tag are read by
// the reader; the others are derived from variables LoadConfig parses itself.
type Config struct {
	Port          int    `env:"PORT" envDefault:"8080"` // Knative sets it
	Service       string `env:"K_SERVICE"`
	Revision      string `env:"K_REVISION"`
	Configuration string `env:"K_CONFIGURATION"`
	// Sink is where events go (K_SINK, the Broker); empty means the function emits nothing.
	Sink string `env:"K_SINK"`
	// CEOverrides are extensions added to every event sent (K_CE_OVERRIDES).
	CEOverrides map[string]string `env:"-"`
	// RedisURL locates the state store (REDIS_URL); empty starts an embedded in-process store
	// whose data lives only as long as the process. REDIS_PASSWORD (from a Secret) is added to
	// it when the URL carries none.
	RedisURL string `env:"REDIS_URL"`
	// RedisCAFile is a PEM file of the CA certificates a rediss:// server's certificate must
	// chain to (REDIS_CA_FILE, a mounted Secret or ConfigMap); empty: the system's roots.
	RedisCAFile string `env:"REDIS_CA_FILE"`
	// StorePrefix starts every state-store key (LENS_STORE_PREFIX, default "lens:{v1}:"); it
	// must hold a {hash tag} and end with ':'. Separate prefixes let tests share one server.
	StorePrefix string `env:"LENS_STORE_PREFIX"`
	// DataDir holds datasets and artifacts (LENS_DATA_DIR, default ~/.local/share/lensfn).
	DataDir string `env:"LENS_DATA_DIR"`
	// ModuleDir holds user WASM modules with their manifests (LENS_MODULE_DIR, optional).
	ModuleDir string `env:"LENS_MODULE_DIR"`
	// BuiltinModuleDir holds the built-in WASM modules (LENS_BUILTIN_MODULE_DIR, default
	// bin/modules as built by `make wasm`).
	BuiltinModuleDir string `env:"LENS_BUILTIN_MODULE_DIR" envDefault:"bin/modules"`
	// CacheDir keeps the WASM compilation cache (LENS_CACHE_DIR, default <DataDir>/cache).
	CacheDir string `env:"LENS_CACHE_DIR"`
	// InstanceID names this process for leases and logs (POD_NAME, else host-pid). The Knative
	// manifests set no POD_NAME, since Knative refuses the downward API by default: Kubernetes
	// names a pod's host after the pod, so the fallback carries the pod name.
	InstanceID string `env:"-"`
	// BackendID names the backend this instance belongs to (LENS_BACKEND_ID, optional): the
	// instances of one backend share its work, and when several backends share a state store
	// each acts only on the work it owns (the evaluation spec's ownership 409). When set,
	// InstanceID is "<BackendID>/<instance>", so every lease names its holder's backend.
	BackendID     string `env:"LENS_BACKEND_ID"`
	LogLevel      string `env:"LOG_LEVEL" envDefault:"info"` // debug, info, warn, error
	LoggingConfig string `env:"K_LOGGING_CONFIG"`            // a zap JSON config, as in Knative's config-logging
	// DrainQuietPeriod is how long the drain waits without requests before shutting down
	// (LENS_DRAIN_QUIET_PERIOD, default 2s locally; queue-proxy already drained on Knative).
	DrainQuietPeriod time.Duration `env:"LENS_DRAIN_QUIET_PERIOD" envDefault:"2s"`
	// ShutdownTimeout bounds the whole graceful shutdown (LENS_SHUTDOWN_TIMEOUT, default 30s).
	ShutdownTimeout time.Duration `env:"LENS_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	// ListenHost is the address the server binds (LENS_LISTEN_HOST; empty: every interface, as
	// Knative needs; the local stack sets 127.0.0.1).
	ListenHost string `env:"LENS_LISTEN_HOST"`
	// Auth says whether routes that declare a scope need a bearer token (LENS_AUTH, default
	// required; off only where the network is trusted, as the loopback local stack is).
	Auth AuthMode `env:"LENS_AUTH" envDefault:"required"`
	// BootstrapTokenSHA256 is the hex SHA-256 of a token carrying every scope
	// (LENS_BOOTSTRAP_TOKEN_SHA256, from a Kubernetes Secret).
	BootstrapTokenSHA256 string `env:"LENS_BOOTSTRAP_TOKEN_SHA256"`
	// AllowedHosts, when set, are the only Host names a scoped route answers (LENS_ALLOWED_HOSTS,
	// comma-separated; DNS rebinding). Origin, when sent, must name one of them or the Host.
	AllowedHosts []string `env:"-"`
	// AllowedOrigins are further browser origins that may call the API (LENS_ALLOWED_ORIGINS,
	// comma-separated, e.g. https://ui.example.com).
	AllowedOrigins []string `env:"-"`
	// Endpoints is the operator's policy for user-given endpoints (LENS_ENDPOINT_ALLOW,
	// LENS_ENDPOINT_DENY).
	Endpoints egress.Rules `env:"-"`
	// SecretKey seals and opens endpoint API keys (LENS_SECRET_KEY: 32 random bytes, base64);
	// empty means keys cannot be stored. Only Sealer reads it. It prints as [redacted].
	SecretKey Secret `env:"LENS_SECRET_KEY"`
	// EventToken is the credential of events (LENS_EVENT_TOKEN; the local stack sets it when
	// LENS_AUTH=required): sent with every event, and required on /events when set. It prints
	// as [redacted].
	EventToken Secret `env:"LENS_EVENT_TOKEN"`

	// environ is the environment the function started with, which ReadSettings reads. It holds
	// secrets: behind a pointer, fmt prints only its address with the Config.
	environ *environment
}

type environment struct{ vars map[string]string }

// Secret is a configuration value that must never reach a log: it formats as [redacted].
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return "[redacted]" }

// Reveal returns the secret's value, for the one place that uses it.
func (s Secret) Reveal() string { return string(s) }

// LoadConfig reads the platform contract from the environment, given as a map (os.Environ's in a
// main, a literal in tests), through the same reader as ReadSettings, then derives and checks
// what the tags cannot say. It keeps the environment for the function's ReadSettings.
func LoadConfig(environ map[string]string) (Config, error) {
	if environ == nil {
		environ = map[string]string{}
	}
	c := Config{environ: &environment{vars: environ}}
	if err := readEnv(environ, &c); err != nil {
		return c, err
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("PORT %d is out of range", c.Port)
	}
	if raw := environ["K_CE_OVERRIDES"]; raw != "" {
		var o struct {
			Extensions map[string]string `json:"extensions"`
		}
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			return c, fmt.Errorf("K_CE_OVERRIDES is not {\"extensions\":{...}}: %w", err)
		}
		c.CEOverrides = o.Extensions
	}
	if c.DataDir == "" {
		home := environ["HOME"]
		if home == "" {
			home = os.TempDir()
		}
		c.DataDir = filepath.Join(home, ".local", "share", "lensfn")
	}
	var err error
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(c.DataDir, "cache")
	}
	c.InstanceID = environ["POD_NAME"]
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		c.InstanceID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.BackendID != "" {
		if strings.Contains(c.BackendID, "/") || len(c.BackendID) > 128 {
			return c, fmt.Errorf("LENS_BACKEND_ID %q: at most 128 characters, no '/'", c.BackendID)
		}
		c.InstanceID = c.BackendID + "/" + c.InstanceID
	}
	if pw := environ["REDIS_PASSWORD"]; pw != "" && c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			return c, errors.New("REDIS_URL is not a redis:// URL")
		}
		if _, has := u.User.Password(); !has {
			u.User = url.UserPassword(u.User.Username(), pw)
			c.RedisURL = u.String()
		}
	}
	if c.RedisCAFile != "" && c.RedisURL == "" {
		return c, errors.New("REDIS_CA_FILE is set but REDIS_URL is not: the embedded store has no TLS (set REDIS_URL to the rediss:// server)")
	}
	switch mode := AuthMode(strings.ToLower(string(c.Auth))); mode {
	case AuthRequired, AuthOff:
		c.Auth = mode
	default:
		return c, fmt.Errorf("LENS_AUTH %q is not one of required, off", environ["LENS_AUTH"])
	}
	c.BootstrapTokenSHA256 = strings.ToLower(strings.TrimSpace(c.BootstrapTokenSHA256))
	if c.BootstrapTokenSHA256 != "" && !auth.ValidBootstrapHash(c.BootstrapTokenSHA256) {
		return c, fmt.Errorf("LENS_BOOTSTRAP_TOKEN_SHA256 is not 64 hex characters (printf %%s \"$TOKEN\" | sha256sum)")
	}
	c.AllowedHosts = listVar(environ["LENS_ALLOWED_HOSTS"])
	c.AllowedOrigins = listVar(environ["LENS_ALLOWED_ORIGINS"])
	if c.Endpoints, err = egress.ParseRules(environ["LENS_ENDPOINT_ALLOW"], environ["LENS_ENDPOINT_DENY"]); err != nil {
		return c, err
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("LOG_LEVEL %q is not one of debug, info, warn, error", c.LogLevel)
	}
	return c, nil
}

// AuthMode is LENS_AUTH.
type AuthMode string

const (
	AuthRequired AuthMode = "required"
	AuthOff      AuthMode = "off"
)

// Sealer is the one way a function gets the key that seals and opens endpoint API keys
// (LENS_SECRET_KEY): nil when none is configured (tasks with a key are then refused). Only
// functions that seal or open keys call it, and only their manifests hold the Secret.
func (c Config) Sealer() (*secret.Sealer, error) { return secret.FromEnv(c.SecretKey.Reveal()) }

// Name is the function's service name.
func (c Config) Name(fallback string) string { return orDefault(c.Service, fallback) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func listVar(raw string) []string {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// BackendOf is the backend named by an instance id (a lease's owner): what precedes its '/', ""
// for an instance of no named backend.
func BackendOf(instanceID string) string {
	backend, _, ok := strings.Cut(instanceID, "/")
	if !ok {
		return ""
	}
	return backend
}
