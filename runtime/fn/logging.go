package fn

import (
	"encoding/json"
	"runtime/debug"

	"github.com/blendle/zapdriver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the function's logger the way Knative's config-logging does (a zap JSON
// config in K_LOGGING_CONFIG over Stackdriver-style production defaults: "severity",
// "timestamp", "message", "caller"), with LOG_LEVEL overriding the config's level and the
// binary's VCS revision as "commit".
//
// It does what knative.dev/pkg/logging.NewLogger does for a process that reads its config from
// the environment, without that package's ConfigMap watching: that imports k8s.io/api/core/v1
// and apimachinery (69 packages, ~50 CPU s of every cold build, #11) for a feature a function
// configured by its environment never uses.
func newLogger(configJSON, level string) *zap.SugaredLogger {
	cfg := zapdriver.NewProductionConfig()
	cfg.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	var parseErr error
	if configJSON != "" {
		parsed := cfg
		if parseErr = json.Unmarshal([]byte(configJSON), &parsed); parseErr == nil {
			cfg = parsed
		}
	}
	if level != "" {
		var l zapcore.Level
		if err := l.UnmarshalText([]byte(level)); err == nil {
			cfg.Level = zap.NewAtomicLevelAt(l)
		}
	}
	logger, err := cfg.Build()
	if err != nil { // e.g. an output path that cannot be opened: the defaults, and say why
		parseErr = err
		fallback := zapdriver.NewProductionConfig()
		fallback.Level = cfg.Level
		if logger, err = fallback.Build(); err != nil {
			logger = zap.NewNop()
		}
	}
	if rev := vcsRevision(); rev != "" {
		logger = logger.With(zap.String("commit", rev))
	}
	log := logger.Sugar()
	if parseErr != nil {
		log.Warnw("K_LOGGING_CONFIG is not a usable zap config: logging with the defaults", "error", parseErr)
	}
	return log
}

// vcsRevision is the commit the binary was built from ("" when the build recorded none).
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
