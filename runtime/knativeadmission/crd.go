package knativeadmission

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdSchemas holds one compiled JSON Schema per served version of every CRD in a folder.
type crdSchemas struct {
	byGVK map[schema.GroupVersionKind]*jsonschema.Schema
	dir   string
}

// crd is the part of a CustomResourceDefinition the schemas come from.
type crd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
			Schema struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// serviceCRD is knative.dev/serving v0.42.2's config/core/300-resources/service.yaml, unchanged
// (Apache-2.0, as the module is): the schema the API server enforces on a Service, for the
// version of Knative whose Go validation this package runs. Embedded so that the deployer checks
// what it creates without any file beside its binary.
//
//go:embed serving-service.yaml
var serviceCRD []byte

func embeddedServiceSchema() (*crdSchemas, error) {
	docs, err := Documents(serviceCRD)
	if err != nil {
		return nil, err
	}
	var objects []Manifest
	for _, d := range docs {
		objects = append(objects, Manifest{File: "serving-service.yaml", JSON: d})
	}
	return compileCRDs(objects, "the embedded knative.dev/serving v0.42.2 Service CRD")
}

func loadCRDSchemas(dir string) (*crdSchemas, error) {
	objects, err := ReadManifests(dir)
	if err != nil {
		return nil, err
	}
	return compileCRDs(objects, dir)
}

func compileCRDs(objects []Manifest, dir string) (*crdSchemas, error) {
	s := &crdSchemas{byGVK: map[schema.GroupVersionKind]*jsonschema.Schema{}, dir: dir}
	for _, o := range objects {
		var c crd
		if err := json.Unmarshal(o.JSON, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		if c.Kind != "CustomResourceDefinition" {
			continue
		}
		for _, v := range c.Spec.Versions {
			if !v.Served || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			gvk := schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: c.Spec.Names.Kind}
			sch, err := compileStructural(gvk, v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", o.File, gvk, err)
			}
			s.byGVK[gvk] = sch
		}
	}
	if len(s.byGVK) == 0 {
		return nil, fmt.Errorf("admission: no CustomResourceDefinition in %s", dir)
	}
	return s, nil
}

// validate checks an object (JSON) against the schema of its kind; a kind without a schema fails.
func (s *crdSchemas) validate(gvk schema.GroupVersionKind, js []byte) []string {
	sch, ok := s.byGVK[gvk]
	if !ok {
		return []string{fmt.Sprintf("error: no CRD schema for %s in %s", gvk, s.dir)}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	err = sch.Validate(inst)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return schemaFindings(verr)
	}
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return nil
}

var english = message.NewPrinter(language.English)

// schemaFindings lists the leaves of a validation error: one line per violated keyword, with the
// JSON pointer of the offending value.
func schemaFindings(e *jsonschema.ValidationError) []string {
	if len(e.Causes) == 0 {
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		return []string{fmt.Sprintf("error: CRD schema: at %s: %s", loc, e.ErrorKind.LocalizedString(english))}
	}
	var out []string
	for _, c := range e.Causes {
		out = append(out, schemaFindings(c)...)
	}
	return out
}

func compileStructural(gvk schema.GroupVersionKind, openAPI map[string]any) (*jsonschema.Schema, error) {
	root := strict(openAPI)
	props, _ := root["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		root["properties"] = props
	}
	// The API server knows these on every object; metadata is checked field by field elsewhere.
	props["apiVersion"] = map[string]any{"const": gvk.GroupVersion().String()}
	props["kind"] = map[string]any{"const": gvk.Kind}
	props["metadata"] = map[string]any{"type": "object"}
	root["required"] = appendUnique(root["required"], "apiVersion", "kind", "metadata")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"

	// Round-trip through the validator's own JSON reader so numbers are json.Number, as it wants.
	raw, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	url := "crd:///" + gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// strict turns an openAPIV3Schema node into JSON Schema with the API server's semantics made
// strict: an object accepts only its declared properties (unknown fields fail, as under
// `kubectl apply --validate=strict`) unless it says x-kubernetes-preserve-unknown-fields or has a
// schema for additionalProperties; `nullable` admits null; x-kubernetes-int-or-string admits an
// integer or a string. anyOf/allOf/oneOf/not only carry value validations in a structural schema,
// so they are kept as they are.
func strict(node map[string]any) map[string]any {
	out := make(map[string]any, len(node)+1)
	for k, v := range node {
		out[k] = v
	}
	if props, ok := node["properties"].(map[string]any); ok {
		converted := make(map[string]any, len(props))
		for name, p := range props {
			if child, ok := p.(map[string]any); ok {
				converted[name] = strict(child)
			}
		}
		out["properties"] = converted
	}
	if items, ok := node["items"].(map[string]any); ok {
		out["items"] = strict(items)
	}
	if ap, ok := node["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = strict(ap)
	}
	preserve, _ := node["x-kubernetes-preserve-unknown-fields"].(bool)
	if node["type"] == "object" && !preserve && node["additionalProperties"] == nil {
		out["additionalProperties"] = false
	}
	if intOrString, _ := node["x-kubernetes-int-or-string"].(bool); intOrString {
		delete(out, "type")
		if _, has := node["anyOf"]; !has {
			out["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		}
	}
	if nullable, _ := node["nullable"].(bool); nullable {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	return out
}

func appendUnique(existing any, names ...string) []any {
	list, _ := existing.([]any)
	have := map[string]bool{}
	for _, v := range list {
		if s, ok := v.(string); ok {
			have[s] = true
		}
	}
	for _, n := range names {
		if !have[n] {
			list = append(list, n)
		}
	}
	return list
}
