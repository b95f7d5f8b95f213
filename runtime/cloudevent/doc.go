// Package cloudevent sends and receives the CloudEvents that hand work between Lensfn functions.
//
// It is the only package that imports github.com/cloudevents/sdk-go. Sending is binary mode to
// K_SINK (the Broker) with retries and exponential backoff, applying K_CE_OVERRIDES extensions.
// Receiving is an http.Handler built on cehttp.NewEventFromHTTPRequest, because sdk-go's
// NewHTTPReceiveHandler hangs under concurrency (sdk-go issues 1224 and 1332). Delivery is
// at-least-once, so the receiver deduplicates on (source, id) through a Deduper before any side
// effect; the claim it takes lives a few seconds and is renewed while the handler runs, so a
// crashed handler does not block redeliveries. Outcomes follow runtime/problem's code table: a
// malformed event or a handler error whose code is not retryable answers 400 (never retried), a
// retryable one its own status (409, 429, 5xx, with Retry-After) so the broker retries.
//
// It may import events and runtime/problem (its retry vocabulary: a handler error is classified
// by its problem code); the state store reaches it only through the Deduper interface.
package cloudevent
