// Package cloudevent sends and receives the CloudEvents that hand work between Lensfn functions.
//
// It is the only package that imports github.com/cloudevents/sdk-go. Sending is binary mode to
// K_SINK (the Broker) with retries and exponential backoff, applying K_CE_OVERRIDES extensions.
// Receiving is an http.Handler built on cehttp.NewEventFromHTTPRequest, because sdk-go's
// NewHTTPReceiveHandler hangs under concurrency (sdk-go issues 1224 and 1332). Delivery is
// at-least-once, so the receiver deduplicates on (source, id) through a Deduper before any side
// effect, answers 400 to a malformed event (never retried) and 429/5xx to transient failures so the
// broker retries.
//
// It may import events and problem; the state store reaches it only through the Deduper interface.
package cloudevent
