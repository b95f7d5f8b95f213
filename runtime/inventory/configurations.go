package inventory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// Size bounds of a configuration artifact.
const (
	MaxConfigurationContentBytes    = 256 << 10
	MaxConfigurationProvenanceBytes = 64 << 10
)

// ConfigurationSpec is what storing a configuration artifact takes; Content and Provenance are
// JSON objects.
type ConfigurationSpec struct {
	Name, SchemaVersion, Type, Format, ProviderRef string
	Content, Provenance                            json.RawMessage
}

// Checksum identifies content: "sha256:" and the hex SHA-256 of its compacted JSON, so the same
// document gives the same checksum whatever its whitespace.
func Checksum(content json.RawMessage) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, content); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func compactObject(field string, raw json.RawMessage, limit int) (json.RawMessage, error) {
	if len(raw) > limit {
		return nil, problem.New(problem.CodeTooLarge, "%s is larger than %d bytes", field, limit)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, problem.Validation(problem.Field("must be a JSON object", "dict_type", "body", field))
	}
	return buf.Bytes(), nil
}

// CreateConfiguration stores a configuration artifact with its checksum. The schema fields are
// checked here too (422 problems), so every writer stores the same shape.
func (r *Repo) CreateConfiguration(ctx context.Context, spec ConfigurationSpec) (Configuration, error) {
	var fields []problem.FieldError
	check := func(ok bool, field, msg string) {
		if !ok {
			fields = append(fields, problem.Field(msg, "value_error", "body", field))
		}
	}
	check(spec.Name != "" && len(spec.Name) <= 200, "name", "must be 1-200 characters")
	check(spec.SchemaVersion == ConfigurationSchemaV1, "schema_version", "must be "+ConfigurationSchemaV1)
	check(spec.Type == ConfigurationGuide || spec.Type == ConfigurationBaseline, "type", "must be guide or baseline")
	check(spec.Format == ConfigurationFormat, "format", "must be "+ConfigurationFormat)
	check(spec.ProviderRef != "" && len(spec.ProviderRef) <= 200, "provider_ref", "must be 1-200 characters")
	if len(fields) > 0 {
		return Configuration{}, problem.Validation(fields...)
	}
	content, err := compactObject("content", spec.Content, MaxConfigurationContentBytes)
	if err != nil {
		return Configuration{}, err
	}
	// Lensfn's own providers have a schema (runtime/deployconfig): a content they could not
	// deploy is refused now, not when a workflow tries it. Other provider refs are kept as given.
	if deployconfig.Known(spec.ProviderRef) {
		if _, err := deployconfig.Parse(spec.ProviderRef, content); err != nil {
			return Configuration{}, err
		}
	}
	provenance := json.RawMessage(`{}`)
	if len(spec.Provenance) > 0 && string(spec.Provenance) != "null" {
		if provenance, err = compactObject("provenance", spec.Provenance, MaxConfigurationProvenanceBytes); err != nil {
			return Configuration{}, err
		}
	}
	sum, err := Checksum(content)
	if err != nil {
		return Configuration{}, err
	}
	c := Configuration{ID: NewID(), Name: spec.Name, SchemaVersion: spec.SchemaVersion, Type: spec.Type, Format: spec.Format,
		ProviderRef: spec.ProviderRef, Content: content, Provenance: provenance, Checksum: sum, ContentBytes: len(content), CreatedAt: now()}
	err = r.create(ctx, KindConfiguration, c.ID, "stored", c.CreatedAt, map[string]string{"type": c.Type, "provider_ref": c.ProviderRef,
		"checksum": c.Checksum}, searchOf(c.Name, c.ProviderRef), c)
	return c, err
}

// Configuration returns the artifact with its content (a 404 problem when it is unknown).
func (r *Repo) Configuration(ctx context.Context, id string) (Configuration, error) {
	var c Configuration
	_, err := r.load(ctx, KindConfiguration, id, &c)
	return c, err
}

// ConfigurationQuery filters a listing of artifacts; empty fields match everything.
type ConfigurationQuery struct {
	Type, ProviderRef, Checksum string
	Page
}

// ListConfigurations returns one page of artifact summaries (no content), newest first.
func (r *Repo) ListConfigurations(ctx context.Context, q ConfigurationQuery) ([]Configuration, int, error) {
	docs, total, err := list[Configuration](ctx, r, state.Query{Kind: KindConfiguration, Offset: q.Offset, Limit: q.Limit,
		Attrs: map[string]string{"type": q.Type, "provider_ref": q.ProviderRef, "checksum": q.Checksum}})
	for i := range docs {
		docs[i] = docs[i].Summary()
	}
	return docs, total, err
}
