package local

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Delivery is the retry policy of the Broker (its spec.delivery).
type Delivery struct {
	Retry   int
	Backoff time.Duration // first delay; doubled per attempt (exponential policy)
	Timeout time.Duration // per attempt
}

// Broker is the local Broker: it accepts CloudEvents, and for every Trigger whose filter matches,
// delivers the event to the Trigger's subscriber, retrying per Delivery and dead-lettering what
// it gives up on. Replies (a CloudEvent in a 2xx response) are published back into the broker.
type Broker struct {
	Triggers   []Trigger
	Resolve    func(service string) (baseURL string, ok bool) // a Service's current address
	Delivery   Delivery
	DeadLetter string // JSONL file the broker appends undeliverable events to
	Log        func(format string, args ...any)
	// Debug, when set, is told about events no Trigger matches. That is normal, as in Knative (an
	// event such as workflow.finished is published for whoever subscribes, and may have no
	// subscriber), so it is no problem to log; nil drops the note.
	Debug func(format string, args ...any)
	// Hosts are the Host names the ingress answers (with any port); a browser's request for
	// another name is DNS rebinding. Empty: any.
	Hosts []string
	// Token, when set (LENS_AUTH=required), is the stack's event credential: the ingress takes
	// only events carrying "Authorization: Bearer <Token>" and deliveries carry it on to the
	// subscribers, whose /events wants it too.
	Token  string
	client *http.Client
	wg     sync.WaitGroup
	mu     sync.Mutex
}

// message is a CloudEvent in transit, kept in the content mode it arrived in.
type message struct {
	header http.Header // the ce-* headers and Content-Type (binary), or Content-Type (structured)
	body   []byte
	attrs  map[string]string
}

// retryable is Knative's SelectiveRetry: transport errors, 404, 408, 409, 429 and 5xx.
func retryable(status int) bool {
	return status == 0 || status == 404 || status == 408 || status == 409 || status == 429 || status >= 500
}

func (b *Broker) logf(format string, args ...any) {
	if b.Log != nil {
		b.Log(format, args...)
	}
}

// ServeHTTP is the broker ingress: 202 once the event is accepted for delivery.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST CloudEvents here", http.StatusMethodNotAllowed)
		return
	}
	if status, msg := b.refuse(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lensfn-events"`)
		}
		http.Error(w, msg, status)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	msg, err := parseMessage(r.Header, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.publish(msg)
	w.WriteHeader(http.StatusAccepted)
}

// refuse says why an event may not enter (status 0: it may): a Host that is not the stack's
// (DNS rebinding), any Origin (functions send events, browsers do not), a missing or wrong
// credential. The credential is compared in constant time and never logged.
func (b *Broker) refuse(r *http.Request) (int, string) {
	if len(b.Hosts) > 0 {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !slices.ContainsFunc(b.Hosts, func(h string) bool { return strings.EqualFold(h, strings.Trim(host, "[]")) }) {
			return http.StatusForbidden, fmt.Sprintf("host %q is not served here", r.Host)
		}
	}
	if r.Header.Get("Origin") != "" {
		return http.StatusForbidden, "the broker takes no cross-origin requests"
	}
	if b.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+b.Token)) != 1 {
		return http.StatusUnauthorized, "events need the stack's event credential (Authorization: Bearer, LENS_EVENT_TOKEN)"
	}
	return 0, ""
}

func parseMessage(h http.Header, body []byte) (*message, error) {
	msg := &message{header: http.Header{}, body: body, attrs: map[string]string{}}
	ct := h.Get("Content-Type")
	if strings.HasPrefix(ct, "application/cloudevents+json") {
		var structured map[string]any
		if err := json.Unmarshal(body, &structured); err != nil {
			return nil, fmt.Errorf("structured CloudEvent is not JSON: %w", err)
		}
		for k, v := range structured {
			if s, ok := v.(string); ok && k != "data" && k != "data_base64" {
				msg.attrs[k] = s
			}
		}
		msg.header.Set("Content-Type", ct)
	} else {
		for k, vs := range h {
			if lk := strings.ToLower(k); strings.HasPrefix(lk, "ce-") && len(vs) > 0 {
				msg.attrs[strings.TrimPrefix(lk, "ce-")] = vs[0]
				msg.header[k] = vs
			}
		}
		if ct != "" {
			msg.header.Set("Content-Type", ct)
		}
	}
	for _, required := range []string{"id", "source", "type", "specversion"} {
		if msg.attrs[required] == "" {
			return nil, fmt.Errorf("not a CloudEvent: the %q attribute is missing", required)
		}
	}
	return msg, nil
}

func (b *Broker) publish(msg *message) {
	matched := 0
	for _, t := range b.Triggers {
		if t.Matches(msg.attrs) {
			matched++
			b.wg.Add(1)
			go func(t Trigger) {
				defer b.wg.Done()
				b.deliver(t, msg)
			}(t)
		}
	}
	if matched == 0 && b.Debug != nil {
		b.Debug("broker: no trigger for %s (%s)", msg.attrs["type"], msg.attrs["id"])
	}
}

// deliver sends to one subscriber with retries; the event is dead-lettered after the last try.
func (b *Broker) deliver(t Trigger, msg *message) {
	var status int
	var lastErr string
	delay := b.Delivery.Backoff
	for attempt := 0; attempt <= b.Delivery.Retry; attempt++ {
		if attempt > 0 {
			time.Sleep(delay)
			delay *= 2
		}
		var reply *message
		status, reply, lastErr = b.attempt(t, msg)
		if status/100 == 2 {
			if reply != nil {
				b.publish(reply)
			}
			return
		}
		if !retryable(status) {
			break
		}
	}
	b.logf("broker: dead-lettering %s (%s) for trigger %s: HTTP %d %s", msg.attrs["type"], msg.attrs["id"], t.Name, status, lastErr)
	b.deadLetter(t, msg, status, lastErr)
}

func (b *Broker) attempt(t Trigger, msg *message) (int, *message, string) {
	base, ok := b.Resolve(t.Subscriber)
	if !ok {
		return 0, nil, "subscriber " + t.Subscriber + " is not running"
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Delivery.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+t.Path, bytes.NewReader(msg.body))
	if err != nil {
		return 0, nil, err.Error()
	}
	for k, vs := range msg.header {
		req.Header[k] = vs
	}
	if b.Token != "" {
		req.Header.Set("Authorization", "Bearer "+b.Token)
	}
	resp, err := b.httpClient().Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, nil, strings.TrimSpace(string(body))
	}
	if resp.Header.Get("Ce-Id") != "" || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/cloudevents+json") {
		if reply, err := parseMessage(resp.Header, body); err == nil {
			return resp.StatusCode, reply, ""
		}
	}
	return resp.StatusCode, nil, ""
}

func (b *Broker) httpClient() *http.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		b.client = &http.Client{Transport: tr}
	}
	return b.client
}

// deadLetter appends the event with Knative's knativeerror* attributes to the dead-letter log.
func (b *Broker) deadLetter(t Trigger, msg *message, status int, errText string) {
	entry := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "trigger": t.Name,
		"attributes": msg.attrs, "data": string(msg.body), "knativeerrordest": t.Subscriber + t.Path,
		"knativeerrorcode": status, "knativeerrordata": errText}
	line, _ := json.Marshal(entry)
	b.mu.Lock()
	defer b.mu.Unlock()
	f, err := os.OpenFile(b.DeadLetter, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.logf("broker: dead-letter log: %v", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

// Wait blocks until every delivery in flight has finished or been dead-lettered.
func (b *Broker) Wait() { b.wg.Wait() }

// deliveryOf reads a Broker object's spec.delivery (ISO-8601 durations such as PT0.5S).
func deliveryOf(obj Object) (Delivery, error) {
	d := Delivery{Retry: 3, Backoff: 200 * time.Millisecond, Timeout: 60 * time.Second}
	var spec struct {
		Delivery *struct {
			Retry         *int   `yaml:"retry"`
			BackoffPolicy string `yaml:"backoffPolicy"`
			BackoffDelay  string `yaml:"backoffDelay"`
			Timeout       string `yaml:"timeout"`
		} `yaml:"delivery"`
	}
	if err := obj.Spec.Decode(&spec); err != nil || spec.Delivery == nil {
		return d, err
	}
	if spec.Delivery.Retry != nil {
		d.Retry = *spec.Delivery.Retry
	}
	var err error
	if spec.Delivery.BackoffDelay != "" {
		if d.Backoff, err = isoDuration(spec.Delivery.BackoffDelay); err != nil {
			return d, err
		}
	}
	if spec.Delivery.Timeout != "" {
		if d.Timeout, err = isoDuration(spec.Delivery.Timeout); err != nil {
			return d, err
		}
	}
	return d, nil
}

// isoDuration parses the PT<n>H<n>M<n>S subset of ISO-8601 durations Knative uses.
func isoDuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(strings.ToUpper(s), "PT")
	if !ok || rest == "" {
		return 0, fmt.Errorf("duration %q is not an ISO-8601 PT<n>H<n>M<n>S duration", s)
	}
	d, err := time.ParseDuration(strings.ToLower(rest))
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}
