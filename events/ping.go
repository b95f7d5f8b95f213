package events

import "reflect"

// TypeKnativePing is the type Knative's PingSource gives every event it sends; a source cannot
// override it (CloudEvents attributes are not extensions). A PingSource schedules benchmarks by
// sending a run.requested payload as its data with the extension ExtensionLensfnEvent set to
// TypeRunRequested; the evaluation API then creates one run per firing.
const TypeKnativePing = "dev.knative.sources.ping"

// ExtensionLensfnEvent is the CloudEvent extension attribute (a PingSource's ceOverrides) that
// says which Lensfn event an external event's data is; Triggers filter on it.
const ExtensionLensfnEvent = "lensfnevent"

// External lists the event types Lensfn consumes but never emits: their type and source are
// another system's, their payload one of ours.
var External = []Definition{
	{
		Type:   TypeKnativePing,
		Source: "/apis/v1/namespaces/<namespace>/pingsources/<name>",
		Description: "A Knative PingSource fired; with lensfnevent=" + TypeRunRequested + " its data is a run.requested " +
			"payload and the evaluation API creates one run per firing (the idempotency key plus the firing's minute).",
		Payload:    reflect.TypeFor[RunRequested](),
		Extensions: map[string]string{ExtensionLensfnEvent: TypeRunRequested},
	},
}

// LookupConsumed returns the definition of an event type Lensfn emits or consumes.
func LookupConsumed(eventType string) (Definition, bool) {
	if d, ok := Lookup(eventType); ok {
		return d, true
	}
	for _, d := range External {
		if d.Type == eventType {
			return d, true
		}
	}
	return Definition{}, false
}
