// Package simulationapi is the simulation-api function: the /api/simulation routes of
// spec/simulation-api.zh.txt. This slice serves the catalogue: backends, scenarios, model
// discovery, the trace-dataset catalogue, dataset downloads (sha256-verified, coalesced, from
// upstream or a mirror) and dataset timelines computed with the trace-parser modules.
//
// A download emits dev.lensfn.simulation.dataset.downloaded.v1; the same function consumes it
// (Trigger dataset-downloaded-to-simulation-api) and builds the dataset's timeline index, so the
// expensive parse happens once, off the request path, exactly once per event.
//
// A task naming a model_service_group_id is bound to the Model Service's active member through
// runtime/inventory (the access key authorises; the member's own key goes with the requests).
//
// It may import events, runtime/fn, runtime/auth, runtime/openapi, runtime/apiroute, runtime/problem, runtime/cloudevent,
// runtime/state, runtime/simtask, runtime/egress, runtime/analysis, runtime/loadgen,
// runtime/inventory, runtime/sse, runtime/report/simreport and
// runtime/wasmhost; nothing imports it but its cmd and tests/.
package simulationapi
