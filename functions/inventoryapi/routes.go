package inventoryapi

import (
	"net/http"

	"github.com/lensfn/lensfn/runtime/apiroute"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/openapi"
)

// OpenAPIPath is where the function serves its OpenAPI document (under /api/cluster, the first
// of its route prefixes; the document covers all four).
const OpenAPIPath = "/api/cluster/openapi.json"

// route is one entry of the function's route table (apiroute.Route): the operation that
// documents it and the method of API that serves it.
type route = apiroute.Route[*API]

// Document is the inventory API's OpenAPI 3.1 document: one operation per route of the route
// table, its schemas generated from the request types the handlers decode and the inventory
// records they answer.
func Document() *openapi.Doc {
	return apiroute.Document(newTable())
}

// newTable makes the document's header and the route table, its operations' schemas
// registered in the document (apiroute adds the operations).
func newTable() (*openapi.Doc, []route) {
	d := openapi.New("Lensfn inventory API", "v1",
		"Clusters and their sessions, deployment executions, Model Services and deployable configurations: the records an evaluation refers to.")
	return d, table(d)
}

// routes is the route table as the runtime serves it for a; it renders the document a serves at
// OpenAPIPath.
func (a *API) routes() ([]fn.Route, error) {
	d, t := newTable()
	routes, doc, err := apiroute.Serve(d, t, a)
	a.doc = doc
	return routes, err
}

// openAPIDocument serves the document rendered from the route table.
func (a *API) openAPIDocument(w http.ResponseWriter, _ *http.Request) error {
	openapi.Write(w, a.doc)
	return nil
}

// table is the route table, its operations' schemas registered in d.
func table(d *openapi.Doc) []route {
	read, admin := string(auth.EvaluateRunRead), string(auth.InventoryAdmin)
	list := func(item openapi.Schema) openapi.Schema {
		return openapi.Object(map[string]any{"items": openapi.ArrayOf(item), "total": openapi.Schema{"type": "integer"}}, "items", "total")
	}
	page := []openapi.Param{{Name: "offset", Description: "items to skip", Schema: openapi.Schema{"type": "integer", "minimum": 0}},
		{Name: "limit", Description: "items to return", Schema: openapi.Schema{"type": "integer", "minimum": 1}}}
	filters := func(names ...string) []openapi.Param {
		out := append([]openapi.Param{}, page...)
		for _, n := range names {
			out = append(out, openapi.Param{Name: n, Description: "only items whose " + n + " is this"})
		}
		return out
	}
	ok := func(desc string, s openapi.Schema) map[int]openapi.Response {
		return map[int]openapi.Response{http.StatusOK: {Description: desc, Schema: s}}
	}
	created := func(desc string, s openapi.Schema) map[int]openapi.Response {
		return map[int]openapi.Response{http.StatusCreated: {Description: desc, Schema: s}}
	}
	deleted := map[int]openapi.Response{http.StatusNoContent: {Description: "deleted"}}
	cluster, session := d.Of(inventory.Cluster{}), d.Of(inventory.Session{})
	execution, service, configuration := d.Of(inventory.Execution{}), d.Of(inventory.ModelService{}), d.Of(inventory.Configuration{})
	notFound, conflict, bad := http.StatusNotFound, http.StatusConflict, http.StatusBadRequest

	routes := []route{
		{Op: openapi.Op{Method: "GET", Path: OpenAPIPath, Summary: "This document", Responses: ok("the OpenAPI 3.1 document", openapi.Schema{"type": "object"})}, Handle: (*API).openAPIDocument},
		{Op: openapi.Op{Method: "POST", Path: "/api/cluster/clusters", Summary: "Register a cluster (its kubeconfig, inline credentials only, is sealed, never returned)", Scope: admin,
			Request: clusterRequest(d), Responses: created("the cluster with its first session", cluster), Errors: []int{bad, conflict}}, Handle: (*API).createCluster, MaxBody: maxKubeconfigBytes + 64<<10},
		{Op: openapi.Op{Method: "GET", Path: "/api/cluster/clusters", Summary: "List clusters", Scope: read, Query: filters("name"), Responses: ok("clusters", list(cluster))}, Handle: (*API).listClusters},
		{Op: openapi.Op{Method: "GET", Path: "/api/cluster/clusters/{id}", Summary: "Get a cluster", Scope: read, Responses: ok("the cluster", cluster), Errors: []int{notFound}}, Handle: (*API).getCluster},
		{Op: openapi.Op{Method: "POST", Path: "/api/cluster/clusters/{id}/sessions", Summary: "Open a new active session", Scope: admin,
			Request: openapi.Schema{"type": "object", "additionalProperties": false}, OptionalBody: true, Responses: created("the session", session), Errors: []int{notFound}}, Handle: (*API).openSession},
		{Op: openapi.Op{Method: "GET", Path: "/api/cluster/sessions/{id}", Summary: "Get a cluster session", Scope: read, Responses: ok("the session", session), Errors: []int{notFound}}, Handle: (*API).getSession},
		{Op: openapi.Op{Method: "POST", Path: "/api/v1/deployments/executions", Summary: "Register an existing OpenAI-compatible endpoint (probed via /v1/models)", Scope: admin,
			Request: d.Request(ExecutionRequest{}, "cluster_session_id", "name", "model", "endpoint"), Responses: created("the ready execution", execution), Errors: []int{bad, notFound, conflict}}, Handle: (*API).createExecution},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/deployments/executions", Summary: "List deployment executions", Scope: read,
			Query: filters("cluster_session_id", "deployment_ownership", "status", "model"), Responses: ok("executions", list(execution))}, Handle: (*API).listExecutions},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/deployments/executions/{id}", Summary: "Get a deployment execution", Scope: read, Responses: ok("the execution", execution), Errors: []int{notFound}}, Handle: (*API).getExecution},
		{Op: openapi.Op{Method: "DELETE", Path: "/api/v1/deployments/executions/{id}", Summary: "Delete a deployment execution (409 while a run uses it)", Scope: admin,
			Responses: deleted, Errors: []int{notFound, conflict}}, Handle: (*API).deleteExecution},
		{Op: openapi.Op{Method: "POST", Path: "/api/v1/model-services", Summary: "Publish a Model Service (its access key is shown once)", Scope: admin,
			Request: d.Request(ModelServiceRequest{}, "name", "published_name", "cluster_session_id", "member_execution_ids"), Responses: created("the Model Service with its access key", d.Of(CreatedModelService{})), Errors: []int{bad, notFound, conflict}}, Handle: (*API).createModelService},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/model-services", Summary: "List Model Services", Scope: read,
			Query: filters("cluster_session_id", "published_name", "status"), Responses: ok("Model Services", list(service))}, Handle: (*API).listModelServices},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/model-services/{id}", Summary: "Get a Model Service with its members' health", Scope: read, Responses: ok("the Model Service", service), Errors: []int{notFound}}, Handle: (*API).getModelService},
		{Op: openapi.Op{Method: "DELETE", Path: "/api/v1/model-services/{id}", Summary: "Delete a Model Service", Scope: admin, Responses: deleted, Errors: []int{notFound, conflict}}, Handle: (*API).deleteModelService},
		{Op: openapi.Op{Method: "POST", Path: "/api/v1/configurations", Summary: "Store a deployable configuration artifact", Scope: admin,
			Request: configurationRequest(d), Responses: created("the configuration with its checksum", configuration), Errors: []int{bad, conflict}}, Handle: (*API).createConfiguration, MaxBody: inventory.MaxConfigurationContentBytes + inventory.MaxConfigurationProvenanceBytes + 64<<10},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/configurations", Summary: "List configurations", Scope: read,
			Query: filters("type", "provider_ref", "checksum"), Responses: ok("configurations", list(configuration))}, Handle: (*API).listConfigurations},
		{Op: openapi.Op{Method: "GET", Path: "/api/v1/configurations/{id}", Summary: "Get a configuration", Scope: read, Responses: ok("the configuration", configuration), Errors: []int{notFound}}, Handle: (*API).getConfiguration},
	}
	// The enums refine the record components the table registered.
	recordEnums(d)
	return routes
}

// The values inventory.Repo and its decoders accept, and the only ones its records hold.
var (
	clusterKinds       = []string{inventory.ClusterLocal, inventory.ClusterKubernetes}
	configurationTypes = []string{inventory.ConfigurationGuide, inventory.ConfigurationBaseline}
	ownerships         = []string{inventory.OwnershipExistingEndpoint, inventory.OwnershipEvaluation}
)

func clusterRequest(d *openapi.Doc) openapi.Schema {
	s := d.Request(ClusterRequest{}, "name", "kind")
	d.Bound(s, "kind", openapi.Schema{"enum": clusterKinds})
	return s
}

func configurationRequest(d *openapi.Doc) openapi.Schema {
	s := d.Request(ConfigurationRequest{}, "name", "schema_version", "type", "format", "provider_ref", "content")
	d.Bound(s, "schema_version", openapi.Schema{"const": inventory.ConfigurationSchemaV1})
	d.Bound(s, "type", openapi.Schema{"enum": configurationTypes})
	d.Bound(s, "format", openapi.Schema{"const": inventory.ConfigurationFormat})
	d.Bound(s, "provider_ref", openapi.Schema{"enum": deployconfig.Providers()})
	return s
}

// recordEnums gives the records' closed vocabularies their enums.
func recordEnums(d *openapi.Doc) {
	d.Refine("Cluster", "kind", openapi.Schema{"enum": clusterKinds})
	d.Refine("Session", "cluster_kind", openapi.Schema{"enum": clusterKinds})
	d.Refine("Session", "status", openapi.Schema{"enum": []string{inventory.SessionActive, inventory.SessionClosed}})
	d.Refine("Execution", "deployment_ownership", openapi.Schema{"enum": ownerships})
	d.Refine("Member", "health", openapi.Schema{"enum": []string{inventory.HealthUnknown, inventory.HealthHealthy, inventory.HealthUnhealthy}})
	for _, service := range []string{"ModelService", "CreatedModelService"} {
		d.Refine(service, "status", openapi.Schema{"enum": []string{inventory.ServiceAvailable, inventory.ServiceUnavailable}})
	}
	d.Refine("Configuration", "schema_version", openapi.Schema{"const": inventory.ConfigurationSchemaV1})
	d.Refine("Configuration", "type", openapi.Schema{"enum": configurationTypes})
	d.Refine("Configuration", "format", openapi.Schema{"const": inventory.ConfigurationFormat})
	d.Refine("Configuration", "provider_ref", openapi.Schema{"enum": deployconfig.Providers()})
}
