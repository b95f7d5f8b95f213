package openapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

var (
	rawType       = reflect.TypeFor[json.RawMessage]()
	timeType      = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
	optionalType  = reflect.TypeFor[Optional]()
)

// Optional is implemented by a field type that holds, absent aside, either null or a value of
// another Go type (a record's tri-state field, rawjson.Opt): its schema is
// that type's, nullable. OptionalOf returns a zero value of the value's type.
type Optional interface{ OptionalOf() any }

// Of returns the schema of v's Go type as encoding/json writes it (a response): a reference
// for a named struct, which becomes a component under its Go name, every field without
// omitempty required.
func (d *Doc) Of(v any) Schema { return d.reflect(v, false, nil) }

// Request returns the schema of v's Go type as the APIs' strict decoder reads it: unknown
// fields are refused, any field may be left out (absent is the zero value or nil) except the
// top-level ones named in required, which the handler insists on. Its components are named
// <Go name>Input when the type also appears in a response.
func (d *Doc) Request(v any, required ...string) Schema {
	return d.reflect(v, true, required)
}

func (d *Doc) reflect(v any, input bool, required []string) Schema {
	t := reflect.TypeOf(v)
	var s Schema
	var err error
	if len(required) > 0 {
		// The top level is inlined, so that its required list is this operation's own.
		if t.Kind() != reflect.Struct {
			err = fmt.Errorf("openapi: required fields of non-struct %s", t)
		} else if s, err = d.structSchema(t, input); err == nil {
			s["required"] = required
		}
	} else {
		s, err = d.schemaOf(t, input)
	}
	if err != nil {
		d.errs = append(d.errs, err)
		return Schema{}
	}
	return s
}

// Bound adds keywords (bounds: minLength, maximum, minItems...; enums) to property name of an
// inlined object schema s (a Request with required fields), as its decoder's validation enforces
// them; a nullable property (a pointer) gets them on its non-null branch. A name s does not
// have is an error of the document, so a renamed field cannot leave a bound behind silently.
func (d *Doc) Bound(s Schema, name string, keywords Schema) {
	if err := refine(s, name, keywords); err != nil {
		d.errs = append(d.errs, err)
	}
}

// Refine is Bound for a property of a component (a reflected named struct).
func (d *Doc) Refine(component, name string, keywords Schema) {
	s, ok := d.schemas[component]
	if !ok {
		d.errs = append(d.errs, fmt.Errorf("openapi: no component %s to refine", component))
		return
	}
	if err := refine(s, name, keywords); err != nil {
		d.errs = append(d.errs, fmt.Errorf("%s: %w", component, err))
	}
}

func refine(s Schema, name string, keywords Schema) error {
	props, _ := s["properties"].(map[string]any)
	prop, ok := props[name].(Schema)
	if !ok {
		return fmt.Errorf("openapi: no property %q to bound", name)
	}
	if alts, ok := prop["anyOf"].([]any); ok && len(alts) == 2 {
		if inner, ok := alts[0].(Schema); ok {
			prop = inner
		}
	}
	for k, v := range keywords {
		prop[k] = v
	}
	return nil
}

// Name gives the component of v's Go type (a named struct) a name of its own, for a type whose
// Go name says little outside its package; call it before the type is first reflected.
func (d *Doc) Name(v any, component string) {
	t := reflect.TypeOf(v)
	d.names[fmt.Sprintf("%s.%s", t.PkgPath(), t.Name())] = component
}

// Nullable lets s be null as well.
func Nullable(s Schema) Schema { return Schema{"anyOf": []any{s, Schema{"type": "null"}}} }

// ArrayOf is an array of s.
func ArrayOf(s Schema) Schema { return Schema{"type": "array", "items": s} }

// Object is a closed object with the given properties (the envelopes the handlers write hold
// only these), of which required must be present.
func Object(props map[string]any, required ...string) Schema {
	s := Schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (d *Doc) schemaOf(t reflect.Type, input bool) (Schema, error) {
	switch {
	case t == nil || t.Kind() == reflect.Interface || t == rawType:
		return Schema{}, nil // any JSON value
	case t == timeType:
		return Schema{"type": "string", "format": "date-time"}, nil
	case t.Kind() != reflect.Pointer && t.Implements(optionalType):
		inner, err := d.schemaOf(reflect.TypeOf(reflect.Zero(t).Interface().(Optional).OptionalOf()), input)
		if err != nil {
			return nil, err
		}
		return Nullable(inner), nil
	case t.Kind() != reflect.Pointer && t.Implements(textType):
		return Schema{"type": "string"}, nil
	case t.Kind() != reflect.Pointer && t.Implements(marshalerType):
		// A type with its own encoding (timestamps, ordered maps): its Go shape says nothing
		// about its JSON, so the document names its type and accepts any value.
		return Schema{"description": "encoded by " + t.String()}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner, err := d.schemaOf(t.Elem(), input)
		if err != nil {
			return nil, err
		}
		return Nullable(inner), nil
	case reflect.String:
		return Schema{"type": "string"}, nil
	case reflect.Bool:
		return Schema{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Schema{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := d.schemaOf(t.Elem(), input)
		if err != nil {
			return nil, err
		}
		// encoding/json writes a nil slice as null.
		return Schema{"type": []string{"array", "null"}, "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("openapi: map key %s is not a string", t.Key())
		}
		values, err := d.schemaOf(t.Elem(), input)
		if err != nil {
			return nil, err
		}
		return Schema{"type": []string{"object", "null"}, "additionalProperties": values}, nil
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return d.structSchema(t, input)
		}
		key := fmt.Sprintf("%s.%s/%v", t.PkgPath(), name, input)
		if comp, ok := d.reflected[key]; ok {
			return Ref(comp), nil
		}
		comp := name
		if named, ok := d.names[fmt.Sprintf("%s.%s", t.PkgPath(), name)]; ok {
			comp = named
		}
		if input && d.schemas[comp] != nil {
			comp += "Input"
		}
		for i := 2; d.schemas[comp] != nil; i++ {
			comp = fmt.Sprintf("%s%d", name, i)
		}
		d.reflected[key] = comp
		d.schemas[comp] = Schema{} // reserved while the fields are reflected (recursive types)
		s, err := d.structSchema(t, input)
		if err != nil {
			return nil, err
		}
		d.schemas[comp] = s
		return Ref(comp), nil
	}
	return nil, fmt.Errorf("openapi: type %s has no JSON Schema mapping", t)
}

// structSchema is a closed object: the APIs reject unknown fields, and write only these.
func (d *Doc) structSchema(t reflect.Type, input bool) (Schema, error) {
	props := map[string]any{}
	required := []string{}
	if err := d.fields(t, props, &required, input); err != nil {
		return nil, err
	}
	if input {
		required = []string{}
	}
	return Schema{"type": "object", "properties": props, "required": required, "additionalProperties": false}, nil
}

// fields adds the properties of struct t; an embedded struct without a json tag has its fields
// promoted, as encoding/json does.
func (d *Doc) fields(t reflect.Type, props map[string]any, required *[]string, input bool) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := d.fields(ft, props, required, input); err != nil {
					return err
				}
				continue
			}
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, err := d.schemaOf(f.Type, input)
		if err != nil {
			return fmt.Errorf("field %s.%s: %w", t.Name(), f.Name, err)
		}
		if doc := f.Tag.Get("doc"); doc != "" {
			if _, isRef := prop["$ref"]; isRef {
				prop = Schema{"allOf": []any{prop}, "description": doc}
			} else {
				prop["description"] = doc
			}
		}
		props[name] = prop
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
	return nil
}
