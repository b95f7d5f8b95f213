package wasmhost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// ManifestFile is the name of the manifest in a module directory.
const ManifestFile = "manifest.json"

// Manifest pins the modules of one directory by sha256:
//
//	{"manifest_version":1,"modules":[{"file":"mooncake_trace.wasm","sha256":"9f…",
//	  "kind":"trace-parser","name":"mooncake_trace"}]}
type Manifest struct {
	ManifestVersion int             `json:"manifest_version"`
	Modules         []ManifestEntry `json:"modules"`
	// Pending names modules a build still under way adds to the directory later (`make run`
	// builds the Baseten parser behind the first answer; wasm-modules/build.sh --defer writes
	// it). A host answers for them as building (a CompilingError) and re-reads the manifest
	// until they are listed under Modules, each pinned by its sha256 like the others.
	Pending []PendingEntry `json:"pending,omitempty"`
}

// PendingEntry is a module the directory does not hold yet.
type PendingEntry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Error says why its build failed; empty while the build is still to come.
	Error string `json:"error,omitempty"`
}

// ManifestEntry is one module of a manifest. Kind and Name must match what the module
// describes about itself.
type ManifestEntry struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
}

// ReadManifest reads and validates dir/manifest.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.ManifestVersion != 1 {
		return m, fmt.Errorf("%s: manifest_version %d is not supported (want 1)", path, m.ManifestVersion)
	}
	for i, e := range m.Modules {
		switch {
		case e.File == "" || filepath.Base(e.File) != e.File:
			return m, fmt.Errorf("%s: module %d: file %q must be a plain file name in the same directory", path, i, e.File)
		case len(e.SHA256) != 64:
			return m, fmt.Errorf("%s: module %q: sha256 must be 64 hex digits", path, e.File)
		case e.Name == "":
			return m, fmt.Errorf("%s: module %q: name is empty", path, e.File)
		}
	}
	named := map[string]bool{}
	for _, e := range m.Modules {
		named[e.Name] = true
	}
	for i, p := range m.Pending {
		switch {
		case p.Name == "":
			return m, fmt.Errorf("%s: pending module %d: name is empty", path, i)
		case named[p.Name]:
			return m, fmt.Errorf("%s: module %q is listed twice (pending, or a module too)", path, p.Name)
		}
		if _, ok := kindExports[p.Kind]; !ok {
			return m, fmt.Errorf("%s: pending module %q: kind %q is neither %q nor %q", path, p.Name, p.Kind, abi.KindTraceParser, abi.KindLatencyCalculator)
		}
		named[p.Name] = true
	}
	return m, nil
}

// ErrChecksum is returned when a module file does not match its manifest's sha256.
var ErrChecksum = errors.New("module sha256 does not match its manifest")

// readPinned reads a module file and checks it against the pinned sha256.
func readPinned(path, want string) ([]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	h := sha256.New()
	b, err := io.ReadAll(io.TeeReader(f, h))
	if err != nil {
		return nil, "", err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return nil, got, fmt.Errorf("%s: %w (manifest %s, file %s)", path, ErrChecksum, want, got)
	}
	return b, got, nil
}
