package cloudevent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// ClaimState is what a Deduper knows of an event before it is handled.
type ClaimState int

const (
	ClaimNew     ClaimState = iota // first delivery: handle it
	ClaimPending                   // another delivery is being handled right now: retry later
	ClaimDone                      // handled before: acknowledge without side effects
)

// Deduper remembers which events were handled. The state store implements it with SET NX PX.
type Deduper interface {
	Claim(ctx context.Context, key string, pendingTTL time.Duration) (ClaimState, error)
	Complete(ctx context.Context, key, outcome string, doneTTL time.Duration) error
	Abandon(ctx context.Context, key string) error
}

// Handler handles one event type. Returning a Permanent error answers 400; any other error
// answers 500 so the broker redelivers.
type Handler func(ctx context.Context, e Event) error

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	Handlers   map[string]Handler // by event type
	Dedupe     Deduper            // required: delivery is at-least-once
	PendingTTL time.Duration      // how long a claim blocks redeliveries while handling; default 10m
	DoneTTL    time.Duration      // how long handled ids are remembered; default 24h
	// Observe, when set, is told each received event's type and outcome: "handled",
	// "duplicate", "busy", "rejected" or "failed".
	Observe func(eventType, outcome string)
	// Log, when set, is told about failures (never event data, which may be large).
	Log func(msg string, keysAndValues ...any)
}

// Receiver is the http.Handler that Triggers deliver to.
type Receiver struct{ cfg ReceiverConfig }

// NewReceiver checks the configuration and returns the handler.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Dedupe == nil {
		return nil, errors.New("cloudevent: a receiver needs a Deduper")
	}
	if cfg.PendingTTL == 0 {
		cfg.PendingTTL = 10 * time.Minute
	}
	if cfg.DoneTTL == 0 {
		cfg.DoneTTL = 24 * time.Hour
	}
	return &Receiver{cfg: cfg}, nil
}

// Types lists the event types this receiver consumes.
func (r *Receiver) Types() []string {
	out := make([]string, 0, len(r.cfg.Handlers))
	for t := range r.cfg.Handlers {
		out = append(out, t)
	}
	return out
}

func (r *Receiver) observe(eventType, outcome string) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(eventType, outcome)
	}
}

func (r *Receiver) log(msg string, kv ...any) {
	if r.cfg.Log != nil {
		r.cfg.Log(msg, kv...)
	}
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "CloudEvents are delivered with POST", http.StatusMethodNotAllowed)
		return
	}
	ce, err := cehttp.NewEventFromHTTPRequest(req)
	if err == nil {
		err = ce.Validate()
	}
	if err != nil {
		r.observe("", "rejected")
		http.Error(w, "malformed CloudEvent: "+err.Error(), http.StatusBadRequest)
		return
	}
	handler, ok := r.cfg.Handlers[ce.Type()]
	if !ok {
		r.observe(ce.Type(), "rejected")
		http.Error(w, fmt.Sprintf("this function does not consume %q", ce.Type()), http.StatusBadRequest)
		return
	}
	ev := Event{
		ID: ce.ID(), Source: ce.Source(), Type: ce.Type(), Subject: ce.Subject(), Time: ce.Time(),
		DataSchema: ce.DataSchema(), Data: ce.Data(), ContentType: ce.DataContentType(),
		Extensions: map[string]string{},
	}
	for k, v := range ce.Extensions() {
		ev.Extensions[k] = fmt.Sprint(v)
	}
	ctx := req.Context()
	key := ev.Source + " " + ev.ID // a URI-reference holds no space
	state, err := r.cfg.Dedupe.Claim(ctx, key, r.cfg.PendingTTL)
	if err != nil {
		r.observe(ev.Type, "failed")
		r.log("event dedupe claim failed", "type", ev.Type, "id", ev.ID, "error", err)
		http.Error(w, "state store unavailable", http.StatusServiceUnavailable)
		return
	}
	switch state {
	case ClaimDone:
		r.observe(ev.Type, "duplicate")
		w.WriteHeader(http.StatusOK)
		return
	case ClaimPending:
		r.observe(ev.Type, "busy")
		w.Header().Set("Retry-After", "1")
		http.Error(w, "this event is being handled by another delivery", http.StatusTooManyRequests)
		return
	}
	herr := handler(ctx, ev)
	var perm permanentError
	switch {
	case herr == nil:
		if err := r.cfg.Dedupe.Complete(context.WithoutCancel(ctx), key, "handled", r.cfg.DoneTTL); err != nil {
			r.log("event dedupe completion failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "handled")
		w.WriteHeader(http.StatusAccepted)
	case errors.As(herr, &perm):
		// Remember the rejection too: redelivering a poison event can only fail the same way.
		if err := r.cfg.Dedupe.Complete(context.WithoutCancel(ctx), key, "rejected", r.cfg.DoneTTL); err != nil {
			r.log("event dedupe completion failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "rejected")
		r.log("event rejected", "type", ev.Type, "id", ev.ID, "error", herr)
		http.Error(w, herr.Error(), http.StatusBadRequest)
	default:
		if err := r.cfg.Dedupe.Abandon(context.WithoutCancel(ctx), key); err != nil {
			r.log("event dedupe abandon failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "failed")
		r.log("event handling failed; the broker will redeliver", "type", ev.Type, "id", ev.ID, "error", herr)
		http.Error(w, "event handling failed; retry", http.StatusInternalServerError)
	}
}
