package simulationapi

import (
	"errors"
	"net/http"
	"os"
	"strconv"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/problem"
)

// responseCodeIssues lists the requests of a task that answered one status code ("unknown":
// no response at all), paging through its per-request records.
func (a *API) responseCodeIssues(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var errs []problem.FieldError
	filter, err := analysis.ParseStatusCodeFilter(q.Get("status_code"))
	if q.Get("status_code") == "" {
		errs = append(errs, problem.Field("field required: an HTTP status code or unknown", "missing", "query", "status_code"))
	} else if err != nil {
		errs = append(errs, problem.Field(err.Error(), "value_error", "query", "status_code"))
	}
	offset, limit := 0, analysis.DefaultIssueLimit
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			errs = append(errs, problem.Field("must be an integer of at least 0", "range", "query", "offset"))
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > analysis.MaxIssueLimit {
			errs = append(errs, problem.Field("must be an integer from 1 to 500", "range", "query", "limit"))
		}
	}
	if len(errs) > 0 {
		return problem.Validation(errs...)
	}
	t, err := a.loadTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	page := analysis.IssuePage{StatusCode: filter.StatusCode(), Issues: []analysis.Issue{}, Offset: offset, Limit: limit}
	if path := t.Internal.RecordsPath; path != "" {
		f, err := os.Open(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err == nil {
			defer f.Close()
			if page, err = analysis.ResponseCodeIssues(f, filter, offset, limit); err != nil {
				return err // a corrupt artifact: a generic 500, the cause in the logs
			}
		}
	}
	fn.WriteJSON(w, http.StatusOK, IssuesResponse{t.ID, page})
	return nil
}

// IssuesResponse is GET /tasks/{id}/response-code-issues: the task and a page of its matching
// requests.
type IssuesResponse struct {
	TaskID string `json:"task_id"`
	analysis.IssuePage
}
