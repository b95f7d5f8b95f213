package rawjson

import (
	"bytes"
	"encoding/json"
)

// Encode is json.Marshal without HTML escaping, as the records are stored and served.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
