// Package events is the catalogue of the CloudEvents that Lensfn functions exchange through the
// Broker: their types (reverse-DNS, versioned), the payload structs carried as JSON data, and the
// JSON Schemas generated from those structs (schemas/, kept fresh by a test).
//
// It owns nothing else and imports only the standard library, so every layer may import it.
package events
