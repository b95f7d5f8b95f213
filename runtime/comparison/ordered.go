package comparison

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Entry is one key and value of an Ordered object.
type Entry[V any] struct {
	Key   string
	Value V
}

// Ordered is a JSON object that keeps its keys in insertion order (encoding/json sorts map
// keys; the report's metric maps follow the reference's listed order instead).
type Ordered[V any] []Entry[V]

// Get returns the value of key (false when absent).
func (o Ordered[V]) Get(key string) (V, bool) {
	for _, e := range o {
		if e.Key == key {
			return e.Value, true
		}
	}
	var zero V
	return zero, false
}

// Keys are the keys in order.
func (o Ordered[V]) Keys() []string {
	keys := make([]string, len(o))
	for i, e := range o {
		keys[i] = e.Key
	}
	return keys
}

// set replaces key's value in place, or appends it.
func (o *Ordered[V]) set(key string, v V) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, Entry[V]{key, v})
}

// MarshalJSON writes the object in key order; a nil Ordered is {}.
func (o Ordered[V]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(e.Value)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", e.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object keeping its key order (a later duplicate key replaces the
// earlier value, as encoding/json does for maps).
func (o *Ordered[V]) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // null
		*o = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("comparison: expected a JSON object")
	}
	out := Ordered[V]{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return errors.New("comparison: expected an object key")
		}
		var v V
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		out.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	*o = out
	return nil
}
