// Package rawjson owns Object, a JSON object kept as raw fields: a record's public document
// (a benchmark run) read and written field by field, so a read-modify-write never loses a field
// this version of Lensfn does not know, absent stays absent and an explicit null stays null.
// Encode writes JSON as the records store it (no HTML escaping); the typed workflow records
// (runtime/workflow) encode with it too.
//
// It imports only the standard library.
package rawjson
