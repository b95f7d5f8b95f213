package fn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/secret"
)

// Config is the environment of a function, read once at start and never changed.
type Config struct {
	Port          int    // PORT (Knative sets it; default 8080)
	Service       string // K_SERVICE
	Revision      string // K_REVISION
	Configuration string // K_CONFIGURATION
	// Sink is where events go (K_SINK, the Broker); empty means the function emits nothing.
	Sink string
	// CEOverrides are extensions added to every event sent (K_CE_OVERRIDES).
	CEOverrides map[string]string
	// RedisURL locates the state store (REDIS_URL); empty starts an embedded in-process store
	// whose data lives only as long as the process. REDIS_PASSWORD (from a Secret) is added to
	// it when the URL carries none.
	RedisURL string
	// RedisCAFile is a PEM file of the CA certificates a rediss:// server's certificate must
	// chain to (REDIS_CA_FILE, a mounted Secret or ConfigMap); empty: the system's roots.
	RedisCAFile string
	// StorePrefix starts every state-store key (LENS_STORE_PREFIX, default "lens:{v1}:"); it
	// must hold a {hash tag} and end with ':'. Separate prefixes let tests share one server.
	StorePrefix string
	// DataDir holds datasets and artifacts (LENS_DATA_DIR, default ~/.local/share/lensfn).
	DataDir string
	// ModuleDir holds user WASM modules with their manifests (LENS_MODULE_DIR, optional).
	ModuleDir string
	// BuiltinModuleDir holds the built-in WASM modules (LENS_BUILTIN_MODULE_DIR, default
	// bin/modules as built by `make wasm`).
	BuiltinModuleDir string
	// CacheDir keeps the WASM compilation cache (LENS_CACHE_DIR, default <DataDir>/cache).
	CacheDir string
	// InstanceID names this process for leases and logs (POD_NAME, else host-pid). The Knative
	// manifests set no POD_NAME, since Knative refuses the downward API by default: Kubernetes
	// names a pod's host after the pod, so the fallback carries the pod name.
	InstanceID string
	// BackendID names the backend this instance belongs to (LENS_BACKEND_ID, optional): the
	// instances of one backend share its work, and when several backends share a state store
	// each acts only on the work it owns (the evaluation spec's ownership 409). When set,
	// InstanceID is "<BackendID>/<instance>", so every lease names its holder's backend.
	BackendID     string
	LogLevel      string // LOG_LEVEL: debug, info, warn, error
	LoggingConfig string // K_LOGGING_CONFIG: a zap JSON config, as in Knative's config-logging
	// DrainQuietPeriod is how long the drain waits without requests before shutting down
	// (LENS_DRAIN_QUIET_PERIOD, default 2s locally; queue-proxy already drained on Knative).
	DrainQuietPeriod time.Duration
	// ShutdownTimeout bounds the whole graceful shutdown (LENS_SHUTDOWN_TIMEOUT, default 30s).
	ShutdownTimeout time.Duration
	// ListenHost is the address the server binds (LENS_LISTEN_HOST; empty: every interface, as
	// Knative needs; the local stack sets 127.0.0.1).
	ListenHost string
	// Auth says whether routes that declare a scope need a bearer token (LENS_AUTH, default
	// required; off only where the network is trusted, as the loopback local stack is).
	Auth AuthMode
	// BootstrapTokenSHA256 is the hex SHA-256 of a token carrying every scope
	// (LENS_BOOTSTRAP_TOKEN_SHA256, from a Kubernetes Secret).
	BootstrapTokenSHA256 string
	// AllowedHosts, when set, are the only Host names a scoped route answers (LENS_ALLOWED_HOSTS,
	// comma-separated; DNS rebinding). Origin, when sent, must name one of them or the Host.
	AllowedHosts []string
	// AllowedOrigins are further browser origins that may call the API (LENS_ALLOWED_ORIGINS,
	// comma-separated, e.g. https://ui.example.com).
	AllowedOrigins []string
	// Endpoints is the operator's policy for user-given endpoints (LENS_ENDPOINT_ALLOW,
	// LENS_ENDPOINT_DENY).
	Endpoints egress.Rules

	// The settings of single functions follow, read in the same pass: there is no way to read
	// the environment after start.

	// SecretKey seals and opens endpoint API keys (LENS_SECRET_KEY: 32 random bytes, base64);
	// empty means keys cannot be stored. It prints as [redacted].
	SecretKey Secret
	// EventToken is the credential of events (LENS_EVENT_TOKEN; the local stack sets it when
	// LENS_AUTH=required): sent with every event, and required on /events when set. It prints
	// as [redacted].
	EventToken Secret

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

// LoadConfig reads the environment, given as a map (os.Environ's in a main, a literal in tests).
func LoadConfig(environ map[string]string) (Config, error) {
	getenv := func(k string) string { return environ[k] }
	c := Config{environ: &environment{vars: environ},
		Service: getenv("K_SERVICE"), Revision: getenv("K_REVISION"), Configuration: getenv("K_CONFIGURATION"),
		Sink: getenv("K_SINK"), RedisURL: getenv("REDIS_URL"), StorePrefix: getenv("LENS_STORE_PREFIX"), ModuleDir: getenv("LENS_MODULE_DIR"),
		LogLevel: orDefault(getenv("LOG_LEVEL"), "info"), LoggingConfig: getenv("K_LOGGING_CONFIG"),
		SecretKey: Secret(getenv("LENS_SECRET_KEY")), EventToken: Secret(getenv("LENS_EVENT_TOKEN")),
	}
	var err error
	if c.Port, err = intVar(getenv, "PORT", 8080); err != nil {
		return c, err
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("PORT %d is out of range", c.Port)
	}
	if raw := getenv("K_CE_OVERRIDES"); raw != "" {
		var o struct {
			Extensions map[string]string `json:"extensions"`
		}
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			return c, fmt.Errorf("K_CE_OVERRIDES is not {\"extensions\":{...}}: %w", err)
		}
		c.CEOverrides = o.Extensions
	}
	c.DataDir = getenv("LENS_DATA_DIR")
	if c.DataDir == "" {
		home := getenv("HOME")
		if home == "" {
			home = os.TempDir()
		}
		c.DataDir = filepath.Join(home, ".local", "share", "lensfn")
	}
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	c.CacheDir = orDefault(getenv("LENS_CACHE_DIR"), filepath.Join(c.DataDir, "cache"))
	c.BuiltinModuleDir = orDefault(getenv("LENS_BUILTIN_MODULE_DIR"), filepath.Join("bin", "modules"))
	c.InstanceID = getenv("POD_NAME")
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		c.InstanceID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.BackendID = getenv("LENS_BACKEND_ID"); c.BackendID != "" {
		if strings.Contains(c.BackendID, "/") || len(c.BackendID) > 128 {
			return c, fmt.Errorf("LENS_BACKEND_ID %q: at most 128 characters, no '/'", c.BackendID)
		}
		c.InstanceID = c.BackendID + "/" + c.InstanceID
	}
	if c.DrainQuietPeriod, err = durationVar(getenv, "LENS_DRAIN_QUIET_PERIOD", 2*time.Second); err != nil {
		return c, err
	}
	if c.ShutdownTimeout, err = durationVar(getenv, "LENS_SHUTDOWN_TIMEOUT", 30*time.Second); err != nil {
		return c, err
	}
	if pw := getenv("REDIS_PASSWORD"); pw != "" && c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			return c, errors.New("REDIS_URL is not a redis:// URL")
		}
		if _, has := u.User.Password(); !has {
			u.User = url.UserPassword(u.User.Username(), pw)
			c.RedisURL = u.String()
		}
	}
	if c.RedisCAFile = getenv("REDIS_CA_FILE"); c.RedisCAFile != "" && c.RedisURL == "" {
		return c, errors.New("REDIS_CA_FILE is set but REDIS_URL is not: the embedded store has no TLS (set REDIS_URL to the rediss:// server)")
	}
	c.ListenHost = getenv("LENS_LISTEN_HOST")
	switch mode := AuthMode(strings.ToLower(orDefault(getenv("LENS_AUTH"), string(AuthRequired)))); mode {
	case AuthRequired, AuthOff:
		c.Auth = mode
	default:
		return c, fmt.Errorf("LENS_AUTH %q is not one of required, off", getenv("LENS_AUTH"))
	}
	c.BootstrapTokenSHA256 = strings.ToLower(strings.TrimSpace(getenv("LENS_BOOTSTRAP_TOKEN_SHA256")))
	if c.BootstrapTokenSHA256 != "" && !auth.ValidBootstrapHash(c.BootstrapTokenSHA256) {
		return c, fmt.Errorf("LENS_BOOTSTRAP_TOKEN_SHA256 is not 64 hex characters (printf %%s \"$TOKEN\" | sha256sum)")
	}
	c.AllowedHosts = listVar(getenv("LENS_ALLOWED_HOSTS"))
	c.AllowedOrigins = listVar(getenv("LENS_ALLOWED_ORIGINS"))
	if c.Endpoints, err = egress.ParseRules(getenv("LENS_ENDPOINT_ALLOW"), getenv("LENS_ENDPOINT_DENY")); err != nil {
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

func intVar(getenv func(string) string, name string, def int) (int, error) {
	raw := getenv(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not an integer", name, raw)
	}
	return v, nil
}

func durationVar(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	raw := getenv(name)
	if raw == "" {
		return def, nil
	}
	v, err := time.ParseDuration(raw)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s=%q is not a duration such as 2s", name, raw)
	}
	return v, nil
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
