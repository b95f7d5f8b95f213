package cloudevent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cecontext "github.com/cloudevents/sdk-go/v2/context"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/lensfn/lensfn/events"
)

// ErrNoSink is returned by Send when the function was started without K_SINK.
var ErrNoSink = errors.New("cloudevent: no sink configured (K_SINK is empty)")

// SenderConfig configures a Sender. Zero values pick the defaults noted per field.
type SenderConfig struct {
	Sink       string            // K_SINK; empty makes Send fail with ErrNoSink
	Source     string            // the `source` attribute of every event sent
	Extensions map[string]string // K_CE_OVERRIDES extensions, applied to every event
	Retries    int               // attempts after the first; default 5
	Backoff    time.Duration     // first backoff, doubled per attempt; default 100ms
	Timeout    time.Duration     // per attempt; default 10s
	// Observe, when set, is told each send's type and outcome ("ok", "rejected", "error").
	Observe func(eventType, outcome string)
	// Token, when set, goes with every send as "Authorization: Bearer <Token>": the local
	// Broker takes events only with the stack's credential (LENS_EVENT_TOKEN).
	Token string
}

// Sender sends binary-mode CloudEvents to the sink.
type Sender struct {
	cfg    SenderConfig
	client cloudevents.Client
}

// NewSender builds a Sender with one pooled HTTP client.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if cfg.Retries == 0 {
		cfg.Retries = 5
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32 // the old default of 2 exhausts ports under fan-out
	var rt http.RoundTripper = transport
	if cfg.Token != "" {
		rt = bearerTransport{next: transport, header: "Bearer " + cfg.Token}
	}
	p, err := cehttp.New(cehttp.WithRoundTripper(rt))
	if err != nil {
		return nil, err
	}
	c, err := cloudevents.NewClient(p, cloudevents.WithTimeNow())
	if err != nil {
		return nil, err
	}
	return &Sender{cfg: cfg, client: c}, nil
}

// bearerTransport adds the event credential to every request it sends.
type bearerTransport struct {
	next   http.RoundTripper
	header string
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", t.header)
	return t.next.RoundTrip(r)
}

// Send emits an event of a catalogued type with JSON data. The id should be deterministic for
// derived events (for example "<task id>/queued") so downstream deduplication works.
func (s *Sender) Send(ctx context.Context, eventType, id, subject string, data any) error {
	err := s.send(ctx, eventType, id, subject, data)
	if s.cfg.Observe != nil {
		outcome := "ok"
		var rejected rejectedError
		if errors.As(err, &rejected) {
			outcome = "rejected"
		} else if err != nil {
			outcome = "error"
		}
		s.cfg.Observe(eventType, outcome)
	}
	return err
}

type rejectedError struct{ status int }

func (r rejectedError) Error() string {
	return fmt.Sprintf("sink rejected the event with HTTP %d", r.status)
}

func (s *Sender) send(ctx context.Context, eventType, id, subject string, data any) error {
	if s.cfg.Sink == "" {
		return ErrNoSink
	}
	if _, ok := events.Lookup(eventType); !ok {
		return fmt.Errorf("cloudevent: %q is not in the event catalogue", eventType)
	}
	e := cloudevents.NewEvent()
	e.SetID(id)
	e.SetType(eventType)
	e.SetSource(s.cfg.Source)
	e.SetTime(time.Now().UTC())
	e.SetDataSchema(events.DataSchemaURI(eventType))
	if subject != "" {
		e.SetSubject(subject)
	}
	for k, v := range s.cfg.Extensions {
		e.SetExtension(k, v)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("cloudevent: encode %s data: %w", eventType, err)
	}
	if err := e.SetData(cloudevents.ApplicationJSON, raw); err != nil {
		return err
	}
	ctx = cloudevents.ContextWithTarget(ctx, s.cfg.Sink)
	ctx = cecontext.WithRetriesExponentialBackoff(ctx, s.cfg.Backoff, s.cfg.Retries)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout*time.Duration(s.cfg.Retries+1))
	defer cancel()
	res := s.client.Send(ctx, e)
	if cloudevents.IsACK(res) {
		return nil
	}
	if status := statusOf(res); status >= 400 && status < 500 {
		return fmt.Errorf("cloudevent: send %s %s: %w", eventType, id, rejectedError{status})
	}
	return fmt.Errorf("cloudevent: send %s %s: %w", eventType, id, res)
}

// statusOf digs the sink's HTTP status out of a send result (0 when there was none); sdk-go wraps
// it in a RetriesResult that does not unwrap.
func statusOf(res error) int {
	var retries *cehttp.RetriesResult
	if errors.As(res, &retries) {
		res = retries.Result
	}
	var httpResult *cehttp.Result
	if errors.As(res, &httpResult) {
		return httpResult.StatusCode
	}
	return 0
}
