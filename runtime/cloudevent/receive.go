package cloudevent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/lensfn/lensfn/runtime/problem"
)

// ClaimState is what a Deduper knows of an event before it is handled.
type ClaimState int

const (
	ClaimNew     ClaimState = iota // first delivery: handle it
	ClaimPending                   // another delivery is being handled right now: retry later
	ClaimDone                      // handled before: acknowledge without side effects
)

// Deduper remembers which events were handled. The state store implements it with claims owned
// by the process: a pending claim lives for pendingTTL unless renewed, so one whose process died
// does not block redeliveries for long.
type Deduper interface {
	Claim(ctx context.Context, key string, pendingTTL time.Duration) (ClaimState, error)
	// Renew extends this process's pending claim while its handler runs.
	Renew(ctx context.Context, key string, pendingTTL time.Duration) error
	Complete(ctx context.Context, key, outcome string, doneTTL time.Duration) error
	Abandon(ctx context.Context, key string) error
}

// Handler handles one event type. Its error is classified by the problem code table, the one
// retry vocabulary: a Permanent error, or a *problem.Error whose code is not retryable, answers
// 400 (remembered, never redelivered); a retryable code answers its own status (409, 429 or 5xx)
// and any other error 500, so the broker redelivers.
type Handler func(ctx context.Context, e Event) error

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	Handlers map[string]Handler // by event type
	Dedupe   Deduper            // required: delivery is at-least-once
	// PendingTTL is how long a claim blocks redeliveries unless renewed; it is renewed every third
	// of it while the handler runs, so a crashed handler's claim frees within it. Default 6s.
	PendingTTL time.Duration
	DoneTTL    time.Duration // how long handled ids are remembered; default 24h
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
		cfg.PendingTTL = 6 * time.Second
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
	claim, err := r.cfg.Dedupe.Claim(ctx, key, r.cfg.PendingTTL)
	if err != nil {
		r.observe(ev.Type, "failed")
		r.log("event dedupe claim failed", "type", ev.Type, "id", ev.ID, "error", err)
		problem.Write(w, req, problem.Wrap(problem.CodeUnavailable, err, "state store unavailable"))
		return
	}
	switch claim {
	case ClaimDone:
		r.observe(ev.Type, "duplicate")
		w.WriteHeader(http.StatusOK)
		return
	case ClaimPending:
		r.observe(ev.Type, "busy")
		problem.Write(w, req, problem.New(problem.CodeTooManyRequest, "this event is being handled by another delivery"))
		return
	}
	herr := r.handle(ctx, key, handler, ev)
	code := codeOf(herr)
	bg := context.WithoutCancel(ctx)
	switch {
	case herr == nil:
		if err := r.cfg.Dedupe.Complete(bg, key, "handled", r.cfg.DoneTTL); err != nil {
			r.log("event dedupe completion failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "handled")
		w.WriteHeader(http.StatusAccepted)
	case !code.Retryable():
		// Remember the rejection too: redelivering a poison event can only fail the same way.
		if err := r.cfg.Dedupe.Complete(bg, key, "rejected", r.cfg.DoneTTL); err != nil {
			r.log("event dedupe completion failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "rejected")
		r.log("event rejected", "type", ev.Type, "id", ev.ID, "error", herr)
		// 400 whatever the code: brokers redeliver some 4xx (Knative: 404, 409).
		problem.Write(w, req, problem.New(problem.CodeBadRequest, "%s", herr.Error()))
	default:
		if err := r.cfg.Dedupe.Abandon(bg, key); err != nil {
			r.log("event dedupe abandon failed", "type", ev.Type, "id", ev.ID, "error", err)
		}
		r.observe(ev.Type, "failed")
		r.log("event handling failed; the broker will redeliver", "type", ev.Type, "id", ev.ID, "error", herr)
		problem.Write(w, req, problem.Wrap(code, herr, "event handling failed; retry"))
	}
}

// handle runs the handler while renewing the delivery's claim, so the claim lives exactly as
// long as this process works on it.
func (r *Receiver) handle(ctx context.Context, key string, handler Handler, ev Event) error {
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(r.cfg.PendingTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-tick.C:
				if err := r.cfg.Dedupe.Renew(renewCtx, key, r.cfg.PendingTTL); err != nil && renewCtx.Err() == nil {
					r.log("event dedupe renewal failed", "type", ev.Type, "id", ev.ID, "error", err)
				}
			}
		}
	}()
	defer func() { stop(); <-renewed }()
	return handler(ctx, ev)
}

// codeOf classifies a handler's error in the problem code table: the code it carries (the
// runtime marks a store outage 503 on top of anything), else 400 for a Permanent error and 500
// for any other.
func codeOf(herr error) problem.Code {
	var pe *problem.Error
	var perm permanentError
	switch {
	case errors.As(herr, &pe):
		return pe.Code
	case errors.As(herr, &perm):
		return problem.CodeBadRequest
	}
	return problem.CodeInternal
}
