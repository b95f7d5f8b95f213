package promtargets

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
)

// group is one entry of a file_sd file.
type group struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// validName keeps a file's name inside the directory and matching the *.json pattern.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func path(dir, name string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("promtargets: %q is not a file name of letters, digits, '.', '_' and '-'", name)
	}
	return filepath.Join(dir, name+".json"), nil
}

// Instance is the host:port of an http(s) base URL (http://127.0.0.1:8000/v1 -> 127.0.0.1:8000),
// the default port filled in.
func Instance(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("promtargets: %q is not an http(s) URL", baseURL)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// Write replaces dir/name.json with one group of targets (host:port) and labels.
func Write(dir, name string, targets []string, labels map[string]string) error {
	p, err := path(dir, name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.Marshal([]group{{Targets: targets, Labels: labels}})
	if err != nil {
		return err
	}
	// A temporary name without .json, so the watcher ignores it until the rename.
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// Remove deletes dir/name.json; a file already gone is not an error.
func Remove(dir, name string) error {
	p, err := path(dir, name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
