package lensctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// DefaultAPI is the local stack's address.
const DefaultAPI = "http://127.0.0.1:8080"

// fileConfig is ~/.config/lensfn/config.yaml.
type fileConfig struct {
	API   string `yaml:"api"`
	Token string `yaml:"token"`
}

// maxConfigBytes bounds the config file.
const maxConfigBytes = 1 << 20

// configPath is the default config file, under $XDG_CONFIG_HOME or ~/.config.
func configPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "lensfn", "config.yaml")
}

func readConfigFile(path string, required bool) (fileConfig, error) {
	var c fileConfig
	if path == "" {
		return c, nil
	}
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if info.Size() > maxConfigBytes {
		return c, fmt.Errorf("config file %s is larger than %d bytes", path, maxConfigBytes)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	dec := yaml.Unmarshal(raw, &c)
	if dec != nil {
		return c, fmt.Errorf("config file %s: %v", path, dec)
	}
	return c, nil
}

// settings resolves the API URL and token: flag, then environment, then config file.
type settings struct {
	api, token string
}

func resolve(flagAPI, flagToken, flagConfig string, getenv func(string) string) (settings, error) {
	path, required := flagConfig, flagConfig != ""
	if path == "" {
		path = configPath(getenv)
	}
	file, err := readConfigFile(path, required)
	if err != nil {
		return settings{}, err
	}
	first := func(vs ...string) string {
		for _, v := range vs {
			if v != "" {
				return v
			}
		}
		return ""
	}
	return settings{api: first(flagAPI, getenv("LENS_API"), file.API, DefaultAPI),
		token: first(flagToken, getenv("LENS_TOKEN"), file.Token)}, nil
}
