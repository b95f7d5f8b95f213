package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Schema renders the JSON Schema (draft 2020-12) of an event type's payload. Every exported field
// with a json tag becomes a property; fields without `omitempty` are required; a `doc` tag becomes
// the description. Unknown properties are rejected, as the APIs reject unknown fields.
func Schema(d Definition) ([]byte, error) {
	root, err := schemaOf(d.Payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Type, err)
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = DataSchemaURI(d.Type)
	root["title"] = d.Type
	root["description"] = d.Description
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func schemaOf(t reflect.Type) (map[string]any, error) {
	switch t.Kind() {
	case reflect.Pointer:
		inner, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key %s is not a string", t.Key())
		}
		values, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case reflect.Struct:
		props := map[string]any{}
		required := []string{}
		if err := structFields(t, props, &required); err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "properties": props, "required": required,
			"additionalProperties": false}, nil
	}
	return nil, fmt.Errorf("type %s has no JSON Schema mapping", t)
}

// structFields adds the properties of struct t; an embedded struct without a json tag has its
// fields promoted, as encoding/json does.
func structFields(t reflect.Type, props map[string]any, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if err := structFields(f.Type, props, required); err != nil {
				return err
			}
			continue
		}
		// Payload fields always carry a json tag: the wire name is part of the contract.
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		prop, err := schemaOf(f.Type)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if doc := f.Tag.Get("doc"); doc != "" {
			prop["description"] = doc
		}
		props[name] = prop
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
	return nil
}
