package inferencesim

import "github.com/lensfn/lensfn/functions/inferencesim/internal/config"

// The simulator's configuration is package internal/config; these are its names for the
// callers outside this folder (the command, tests/).
type (
	Config      = config.Config
	Environment = config.Environment
)

// ParseConfig reads the command line (and its --config file) over the environment.
var ParseConfig = config.Parse

// Usage is the --help text.
func Usage() string { return config.Usage() }
