package evalrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/lensfn/lensfn/runtime/rawjson"
)

// plain is Run without its methods (the encoding of its Go fields).
type plain Run

// goField is one JSON field of Run's Go fields: where it is, and whether an empty value is left
// out (omitempty) or a zero one (omitzero).
type goField struct {
	index               []int
	omitEmpty, omitZero bool
}

// goFields are Run's JSON fields by name (the embedded structs' promoted), as encoding/json
// reads and writes them.
var goFields = func() map[string]goField {
	out := map[string]goField{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(slices.Clone(prefix), i)
			tag := f.Tag.Get("json")
			if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, index)
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out[name] = goField{index: index, omitEmpty: strings.Contains(opts, "omitempty"), omitZero: strings.Contains(opts, "omitzero")}
		}
	}
	walk(reflect.TypeFor[plain](), nil)
	return out
}()

// writes reports whether encoding r's Go fields writes key (a known field, not left out).
func (r *Run) writes(key string) bool {
	f, ok := goFields[key]
	if !ok {
		return false
	}
	v := reflect.ValueOf((*plain)(r)).Elem().FieldByIndex(f.index)
	switch {
	case f.omitZero:
		if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
			return !z.IsZero()
		}
		return !v.IsZero()
	case f.omitEmpty:
		switch v.Kind() {
		case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
			return v.Len() > 0
		case reflect.Pointer, reflect.Interface:
			return !v.IsNil()
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
			return !v.IsZero()
		}
	}
	return true
}

// encode writes the Go fields, then the Extra ones they leave out (sorted), then more (the
// stored run's internal part).
func (r *Run) encode(more map[string]json.RawMessage) ([]byte, error) {
	doc, err := rawjson.Encode((*plain)(r))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		if !r.writes(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && len(more) == 0 {
		return doc, nil
	}
	slices.Sort(keys)
	out := bytes.NewBuffer(doc[:len(doc)-1]) // without its closing brace
	add := func(k string, v json.RawMessage) error {
		if !json.Valid(v) {
			return fmt.Errorf("evalrun: run %s: field %s is not valid JSON", r.ID, k)
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		name, _ := marshal(k)
		out.Write(name)
		out.WriteByte(':')
		out.Write(v)
		return nil
	}
	for _, k := range keys {
		if err := add(k, r.Extra[k]); err != nil {
			return nil, err
		}
	}
	for k, v := range more {
		if err := add(k, v); err != nil {
			return nil, err
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// fields is the public document as raw fields by name.
func (r *Run) fields() (map[string]json.RawMessage, error) {
	doc, err := r.encode(nil)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// MarshalJSON encodes the public document (Extra included, Internal left out).
func (r *Run) MarshalJSON() ([]byte, error) { return r.encode(nil) }

// UnmarshalJSON decodes a public document: the fields this version knows into the Go fields,
// the others (and known ones the Go fields cannot carry as stored) into Extra. A stored field of
// another shape than this version's is kept as stored too. Internal is left as it is.
func (r *Run) UnmarshalJSON(doc []byte) error {
	_, err := r.decode(doc)
	return err
}

// decode is UnmarshalJSON, returning the stored internal part (nil when there is none).
func (r *Run) decode(doc []byte) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("evalrun: stored run is not a JSON object: %v", err)
	}
	internal := fields[internalKey]
	delete(fields, internalKey)
	p := plain{Internal: r.Internal}
	if err := json.Unmarshal(doc, &p); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok {
			return nil, fmt.Errorf("evalrun: stored run does not decode: %w", err)
		}
		// A field of another shape (a newer version's): decode field by field, leaving each that
		// does not decode zero, so that Extra keeps it as stored.
		p = plain{Internal: r.Internal}
		pv := reflect.ValueOf(&p).Elem()
		for k, raw := range fields {
			if f, ok := goFields[k]; ok {
				v := reflect.New(pv.FieldByIndex(f.index).Type())
				if json.Unmarshal(raw, v.Interface()) == nil {
					pv.FieldByIndex(f.index).Set(v.Elem())
				}
			}
		}
	}
	p.Extra = nil
	for k, v := range fields {
		if !(*Run)(&p).writes(k) {
			if p.Extra == nil {
				p.Extra = map[string]json.RawMessage{}
			}
			p.Extra[k] = v
		}
	}
	*r = Run(p)
	return internal, nil
}

// Marshal encodes the run for the store, internal fields included.
func Marshal(r *Run) ([]byte, error) {
	internal, err := rawjson.Encode(r.Internal)
	if err != nil {
		return nil, err
	}
	return r.encode(map[string]json.RawMessage{internalKey: internal})
}

// Unmarshal decodes a stored run.
func Unmarshal(doc []byte) (*Run, error) {
	r := &Run{}
	internal, err := r.decode(doc)
	if err != nil {
		return nil, err
	}
	if internal != nil {
		if err := json.Unmarshal(internal, &r.Internal); err != nil {
			return nil, fmt.Errorf("evalrun: stored run's internal part is not valid: %w", err)
		}
	}
	return r, nil
}
