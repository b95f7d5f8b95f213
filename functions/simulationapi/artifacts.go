package simulationapi

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/report/simreport"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// downloadArtifact streams one of the task's artifacts as a file attachment.
func (a *API) downloadArtifact(w http.ResponseWriter, r *http.Request) error {
	t, err := a.loadTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	kind := r.PathValue("kind")
	var found *simtask.Artifact
	if t.Result != nil {
		for i := range t.Result.Artifacts {
			if t.Result.Artifacts[i].Kind == kind {
				found = &t.Result.Artifacts[i]
			}
		}
	}
	if found == nil && (kind == simreport.KindHTML || kind == simreport.KindCSV) && simtask.Terminal(t.Status) &&
		t.Result != nil && len(t.Result.Summary) > 0 {
		// A task finished before reports existed, or whose report could not be written: write it now.
		arts, err := simreport.Write(t, time.Now())
		if err != nil {
			return problem.Wrap(problem.CodeInternal, err, fmt.Sprintf("the %q artifact of task %s could not be written", kind, t.ID))
		}
		for i := range arts {
			if arts[i].Kind == kind {
				found = &arts[i]
			}
		}
	}
	if found == nil {
		kinds := []string{}
		if t.Result != nil {
			for _, art := range t.Result.Artifacts {
				kinds = append(kinds, art.Kind)
			}
		}
		return problem.New(problem.CodeNotFound, "simulation task %s has no %q artifact (available: %s)", t.ID, kind, strings.Join(kinds, ", "))
	}
	path, ok := a.tasks.ArtifactPath(t.ID, kind)
	if !ok {
		return problem.New(problem.CodeNotFound, "simulation task %s has no %q artifact", t.ID, kind)
	}
	f, err := openRegular(path)
	if err != nil {
		return problem.New(problem.CodeNotFound, "artifact %q of task %s is missing from the artifact store", kind, t.ID)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", artifactMediaTypes[kind])
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if kind == simreport.KindHTML {
		// The report is self-contained: a browser opening it may load nothing and run nothing.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s"`, t.ID, filepath.Base(path)))
	http.ServeContent(w, r, filepath.Base(path), info.ModTime(), f)
	return nil
}

// artifactMediaTypes are fixed per kind, like the paths.
var artifactMediaTypes = map[string]string{"summary-json": "application/json", "per-request-jsonl": "application/x-ndjson",
	simreport.KindHTML: "text/html; charset=utf-8", simreport.KindCSV: "text/csv; charset=utf-8"}

// openRegular opens a regular file that is not a symlink (O_NOFOLLOW), so nothing planted in a
// task folder can redirect a download.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	return f, nil
}

// view is the task as responses show it: paths relative to the data dir, so no answer reveals
// where the installation keeps its files (or its secret key).
func (a *API) view(t *simtask.Task) *simtask.Task {
	v := *t
	v.TaskDir = a.relative(t.TaskDir)
	v.Prompt.Trace.Path = a.relative(t.Prompt.Trace.Path)
	if t.Result != nil {
		r := *t.Result
		r.Artifacts = make([]simtask.Artifact, len(t.Result.Artifacts))
		for i, art := range t.Result.Artifacts {
			art.Path = a.relative(art.Path)
			r.Artifacts[i] = art
		}
		if r.BackendMetrics == nil { // the spec shows {} for a backend that reports none
			r.BackendMetrics = map[string]any{}
		}
		v.Result = &r
	}
	v.Logs = make([]string, len(t.Logs))
	for i, l := range t.Logs {
		v.Logs[i] = a.scrubPaths(l)
	}
	for _, p := range []**string{&v.ErrorMessage, &v.ArtifactError} {
		if *p != nil {
			s := a.scrubPaths(**p)
			*p = &s
		}
	}
	v.ProgressMessage = a.scrubPaths(t.ProgressMessage)
	return &v
}

// relative is p relative to the data dir ("" stays "", a path outside it keeps only its name).
func (a *API) relative(p string) string {
	if p == "" {
		return ""
	}
	rel, err := filepath.Rel(a.deps.Config.DataDir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filepath.Base(p)
	}
	return filepath.ToSlash(rel)
}

// scrubPaths removes the data dir's absolute prefix from free text.
func (a *API) scrubPaths(s string) string {
	return strings.ReplaceAll(s, a.deps.Config.DataDir+string(filepath.Separator), "")
}
