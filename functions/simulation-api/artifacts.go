package simulationapi

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/lensfn/lensfn/runtime/problem"
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
	if found == nil {
		kinds := []string{}
		if t.Result != nil {
			for _, art := range t.Result.Artifacts {
				kinds = append(kinds, art.Kind)
			}
		}
		return problem.New(problem.CodeNotFound, "simulation task %s has no %q artifact (available: %s)", t.ID, kind, strings.Join(kinds, ", "))
	}
	// Artifacts live in the task's folder; refuse anything a tampered record points elsewhere.
	if rel, err := filepath.Rel(t.TaskDir, found.Path); err != nil || strings.HasPrefix(rel, "..") {
		return problem.New(problem.CodeNotFound, "artifact %q is outside the task folder", kind)
	}
	f, err := os.Open(found.Path)
	if err != nil {
		return problem.New(problem.CodeNotFound, "artifact %q of task %s is missing from the artifact store", kind, t.ID)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", found.MediaType)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s"`, t.ID, filepath.Base(found.Path)))
	http.ServeContent(w, r, filepath.Base(found.Path), info.ModTime(), f)
	return nil
}
