package cloudevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Event is a received CloudEvent in the form handlers see; functions never touch sdk-go types.
type Event struct {
	ID          string
	Source      string
	Type        string
	Subject     string
	Time        time.Time
	DataSchema  string
	Data        []byte
	Extensions  map[string]string
	ContentType string
}

// DecodeData unmarshals the JSON data into v, rejecting unknown fields and trailing data: a
// payload that does not fit its schema is a poison event, not something to retry.
func (e Event) DecodeData(v any) error {
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Permanent(fmt.Errorf("event %s data does not fit %T: %w", e.Type, v, err))
	}
	if dec.More() {
		return Permanent(fmt.Errorf("event %s data has trailing content", e.Type))
	}
	return nil
}

// permanentError marks a failure that no redelivery can fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks err as not worth retrying: the receiver answers 400 and remembers the outcome.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}
