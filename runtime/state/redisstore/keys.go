package redisstore

import (
	"fmt"
	"strings"
)

// DefaultPrefix keeps every key in one Cluster slot through the {v1} hash tag.
const DefaultPrefix = "lens:{v1}:"

type keyspace struct{ prefix string }

func validatePrefix(p string) error {
	open, close := strings.IndexByte(p, '{'), strings.IndexByte(p, '}')
	if open < 0 || close < open+2 {
		return fmt.Errorf("redisstore: key prefix %q needs a non-empty hash tag such as {v1}", p)
	}
	if !strings.HasSuffix(p, ":") {
		return fmt.Errorf("redisstore: key prefix %q must end with ':'", p)
	}
	return nil
}

func (k keyspace) record(kind, id string) string { return k.prefix + "rec:" + kind + ":" + id }
func (k keyspace) all(kind string) string        { return k.prefix + "idx:" + kind + ":all" }
func (k keyspace) status(kind, status string) string {
	return k.prefix + "idx:" + kind + ":s:" + status
}
func (k keyspace) attr(kind, name, value string) string {
	return k.prefix + "idx:" + kind + ":a:" + name + ":" + value
}
func (k keyspace) facet(kind, name string) string  { return k.prefix + "facet:" + kind + ":" + name }
func (k keyspace) statuses(kind string) string     { return k.prefix + "statuses:" + kind }
func (k keyspace) search(kind string) string       { return k.prefix + "search:" + kind }
func (k keyspace) gen(kind string) string          { return k.prefix + "gen:" + kind }
func (k keyspace) list(kind, digest string) string { return k.prefix + "list:" + kind + ":" + digest }
func (k keyspace) listGen(kind, digest string) string {
	return k.prefix + "list:" + kind + ":" + digest + ":gen"
}
func (k keyspace) progress(kind, id string) string { return k.prefix + "progress:" + kind + ":" + id }
func (k keyspace) logs(kind, id string) string     { return k.prefix + "logs:" + kind + ":" + id }
func (k keyspace) logsDropped(kind, id string) string {
	return k.prefix + "logs-dropped:" + kind + ":" + id
}
func (k keyspace) lease(name string) string   { return k.prefix + "lease:" + name }
func (k keyspace) fence(name string) string   { return k.prefix + "fence:" + name }
func (k keyspace) claim(key string) string    { return k.prefix + "claim:" + key }
func (k keyspace) seq() string                { return k.prefix + "seq" }
func (k keyspace) counter(name string) string { return k.prefix + "counter:" + name }

// Record hash fields. Attributes are stored as attrField+name.
const (
	fieldKind      = "kind"
	fieldID        = "id"
	fieldStatus    = "status"
	fieldVersion   = "version"
	fieldCreatedMS = "created_ms"
	fieldUpdatedMS = "updated_ms"
	fieldScore     = "score"
	fieldSearch    = "search"
	fieldDoc       = "doc"
	fieldFence     = "fence"
	attrField      = "a:"
)
