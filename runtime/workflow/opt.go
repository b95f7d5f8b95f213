package workflow

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/lensfn/lensfn/runtime/rawjson"
)

// knownKeys maps the JSON names of a struct type's fields (json:"-" excluded) to their indexes.
var knownKeys sync.Map // reflect.Type -> map[string]int

func keysOf(t reflect.Type) map[string]int {
	if k, ok := knownKeys.Load(t); ok {
		return k.(map[string]int)
	}
	keys := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" && name != "" {
			keys[name] = i
		}
	}
	knownKeys.Store(t, keys)
	return keys
}

// encodeFields is v (a struct without methods of its own) as raw fields, with extra's fields
// the struct does not hold added back.
func encodeFields(v any, extra map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	raw, err := rawjson.Encode(v)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k, x := range extra {
		if _, ok := fields[k]; !ok {
			fields[k] = x
		}
	}
	return fields, nil
}

// encodeDoc is v (a struct without methods of its own, its fields in the order of their keys)
// encoded with extra's fields it does not hold, keys sorted as the store writes them. Without
// extra that is v's own encoding; an extra key sorting before all of v's (_internal) is put in
// front; anything else goes through encodeFields.
func encodeDoc(v any, extra map[string]json.RawMessage) ([]byte, error) {
	raw, err := rawjson.Encode(v)
	if err != nil || len(extra) == 0 {
		return raw, err
	}
	if len(extra) == 1 && len(raw) > 2 {
		for k, x := range extra {
			if k < "a" { // before every lowercase key of v
				key, _ := rawjson.Encode(k)
				var out bytes.Buffer
				out.Grow(len(raw) + len(key) + len(x) + 2)
				out.WriteByte('{')
				out.Write(key)
				out.WriteByte(':')
				if err := json.Compact(&out, x); err != nil {
					return nil, err
				}
				out.WriteByte(',')
				out.Write(raw[1:])
				return out.Bytes(), nil
			}
		}
	}
	fields, err := encodeFields(v, extra)
	if err != nil {
		return nil, err
	}
	return rawjson.Encode(fields)
}

// decodeFields decodes b into v (a pointer to a struct without methods of its own) and returns
// the fields v's type does not know (nil when none). A stored field of another shape than its
// Go field's (written by another build) is kept as stored in the returned fields, its Go field
// left absent, so it is written back as it was unless the code sets the field.
func decodeFields(b []byte, v any) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, errNotObject
	}
	rv := reflect.ValueOf(v).Elem()
	known := keysOf(rv.Type())
	whole := json.Unmarshal(b, v) == nil
	if !whole {
		rv.Set(reflect.Zero(rv.Type())) // field by field instead
	}
	var extra map[string]json.RawMessage
	for k, x := range fields {
		i, ok := known[k]
		if ok && !whole {
			f := rv.Field(i)
			if err := json.Unmarshal(x, f.Addr().Interface()); err != nil {
				f.Set(reflect.Zero(f.Type()))
				ok = false
			}
		}
		if !ok {
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = x
		}
	}
	return extra, nil
}

func marshal(v any) ([]byte, error) { return rawjson.Encode(v) }
