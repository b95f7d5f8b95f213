// Package rawjson owns what the typed evaluation records (runtime/evalrun, runtime/workflow)
// share to keep their stored JSON as it was: Opt, a field that is absent, an explicit null or a
// value, so a read-modify-write keeps each of the three states (omitzero leaves the absent one
// out); and Encode, JSON as the records store and serve it (no HTML escaping).
//
// It imports only the standard library.
package rawjson
