package inventoryapi

import (
	"encoding/json"
	"net/http"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
)

// ConfigurationRequest is the body of POST /api/v1/configurations.
type ConfigurationRequest struct {
	Name          *string         `json:"name"`
	SchemaVersion *string         `json:"schema_version"`
	Type          *string         `json:"type"`
	Format        *string         `json:"format"`
	ProviderRef   *string         `json:"provider_ref"`
	Content       json.RawMessage `json:"content"`
	Provenance    json.RawMessage `json:"provenance"`
}

func (a *API) createConfiguration(w http.ResponseWriter, r *http.Request) error {
	var req ConfigurationRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := required(map[string]bool{"name": req.Name != nil, "schema_version": req.SchemaVersion != nil, "type": req.Type != nil,
		"format": req.Format != nil, "provider_ref": req.ProviderRef != nil, "content": req.Content != nil}); err != nil {
		return err
	}
	c, err := a.repo.CreateConfiguration(r.Context(), inventory.ConfigurationSpec{Name: *req.Name, SchemaVersion: *req.SchemaVersion,
		Type: *req.Type, Format: *req.Format, ProviderRef: *req.ProviderRef, Content: req.Content, Provenance: req.Provenance})
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusCreated, c)
	return nil
}

func (a *API) listConfigurations(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r)
	if err != nil {
		return err
	}
	q, err := queryValues(r, "type", "provider_ref", "checksum")
	if err != nil {
		return err
	}
	items, total, err := a.repo.ListConfigurations(r.Context(), inventory.ConfigurationQuery{Type: q["type"],
		ProviderRef: q["provider_ref"], Checksum: q["checksum"], Page: page})
	return writeList(w, items, total, err)
}

func (a *API) getConfiguration(w http.ResponseWriter, r *http.Request) error {
	c, err := a.repo.Configuration(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, c)
	return nil
}
