package inferencesim

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/jsonstr"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// The settings /admin/config may change at run time, in the order its document lists them:
// failure injection, the calculator, every latency flag of the core (latency.DurationFlags,
// the one list of their names, then the load factor) and the fake metrics.
const (
	settingFailureRate  = "failure-injection-rate"
	settingFailureTypes = "failure-types"
	settingCalculator   = "latency-calculator"
	settingFakeMetrics  = "fake-metrics"
)

var adminSettings = func() []string {
	names := []string{settingFailureRate, settingFailureTypes, settingCalculator}
	for _, f := range latency.DurationFlags {
		names = append(names, f.Name)
	}
	return append(names, latency.FactorFlag, settingFakeMetrics)
}()

// adminView is the document GET /admin/config returns (and POST after a change): every
// admin setting in adminSettings order, durations as Go duration strings.
func adminView(st *settings) []byte {
	p := st.latencyParams
	b := make([]byte, 0, 1024)
	add := func(key string, v any) {
		if len(b) == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, key)
		b = append(b, ':')
		raw, _ := json.Marshal(v) // strings, numbers and the fake-metrics document: cannot fail
		b = append(b, raw...)
	}
	add(settingFailureRate, st.failureRate)
	add(settingFailureTypes, append([]string{}, st.failureTypes...))
	add(settingCalculator, st.calcName)
	for _, f := range latency.DurationFlags {
		add(f.Name, f.Field(&p).String())
	}
	add(latency.FactorFlag, p.TimeFactorUnderLoad)
	add(settingFakeMetrics, st.fake) // a nil *FakeMetrics is null
	return append(b, '}')
}

// /admin/config: GET returns the run-time settings; POST changes some of
// them (failure injection, latency, fake metrics). Anything else is a 400.
func (r *rank) handleAdminConfig(ctx *fasthttp.RequestCtx) {
	s := r.sim
	if e := r.refuseBrowserAdmin(ctx); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	if ctx.IsGet() {
		b := adminView(s.settings.Load())
		ctx.Response.Header.SetContentType(ctJSON)
		ctx.SetBody(b)
		return
	}
	if e := openai.CheckJSONShape(ctx.PostBody()); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(ctx.PostBody(), &upd); err != nil || upd == nil {
		msg := "the body must be a JSON object of settings"
		if err != nil {
			msg = err.Error()
		}
		openai.WriteError(ctx, openai.NewError(400, "Invalid admin configuration update: "+msg))
		return
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	next, e := s.applyAdminUpdate(upd)
	if e != nil {
		openai.WriteError(ctx, e)
		return
	}
	s.settings.Store(next)
	b := adminView(next)
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(b)
}

// refuseBrowserAdmin refuses what a web page the operator opens could send to /admin, which
// changes latencies and failure injection and so falsifies results: a Host that is not this
// simulator's (DNS rebinding: LENS_ALLOWED_HOSTS when set, else an address, localhost or a
// cluster-internal name), an Origin other than the Host (the simulator serves no pages, so
// every browser origin is foreign), and a POST body that is not JSON (a form or text/plain
// POST is the one cross-origin write a browser sends without asking first).
func (r *rank) refuseBrowserAdmin(ctx *fasthttp.RequestCtx) *openai.Error {
	host := string(ctx.Host())
	if !adminHostAllowed(host, r.cfg.AllowedHosts) {
		return openai.NewError(403, "Forbidden: /admin does not answer host "+strconv.Quote(host)+" (LENS_ALLOWED_HOSTS)")
	}
	if origin := ctx.Request.Header.Peek("Origin"); origin != nil {
		u, err := url.Parse(string(origin))
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, host) {
			return openai.NewError(403, "Forbidden: /admin refuses cross-origin requests (Origin "+strconv.Quote(string(origin))+")")
		}
	}
	if ctx.IsPost() {
		mt, _, err := mime.ParseMediaType(string(ctx.Request.Header.ContentType()))
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return openai.NewError(415, "Unsupported Media Type: /admin takes application/json bodies")
		}
	}
	return nil
}

// adminHostAllowed: the operator's list when there is one; without it a name a public DNS
// server could answer (and rebind) is refused (egress.InternalHost).
func adminHostAllowed(host string, allowed []string) bool {
	if len(allowed) > 0 {
		return slices.ContainsFunc(allowed, func(h string) bool { return strings.EqualFold(strings.Trim(h, "[]"), hostOnly(host)) })
	}
	return egress.InternalHost(host)
}

// hostOnly drops the port and IPv6 brackets of a Host header.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// applyAdminUpdate validates an update exactly as the command line is
// validated: each value goes through its flag's parser onto a copy of the
// running configuration, and the copy through Config.Validate. Nothing
// changes unless all of it is valid.
func (s *Simulator) applyAdminUpdate(upd map[string]json.RawMessage) (*settings, *openai.Error) {
	cur := s.settings.Load()
	c := *s.cfg
	c.FailureInjectionRate, c.FailureTypes, c.FakeMetrics = cur.failureRate, cur.failureTypes, cur.fake
	c.LatencyCalculator, c.Latency = cur.calcName, cur.latencyParams
	keys := make([]string, 0, len(upd))
	for k := range upd {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error reported does not depend on map order
	invalid := func(msg string) *openai.Error {
		return openai.NewError(400, "Invalid admin configuration update: "+msg)
	}
	for _, key := range keys {
		if !slices.Contains(adminSettings, key) {
			return nil, invalid("unknown or read-only setting " + strconv.Quote(key) + " (settable: " + strings.Join(adminSettings, ", ") + ")")
		}
		raw := bytes.TrimSpace(upd[key])
		if key == settingFakeMetrics && string(raw) == "null" {
			c.FakeMetrics = nil
			continue
		}
		vals, err := flagValues(raw)
		if err != nil {
			return nil, openai.NewParamError(400, "Invalid admin configuration update: --"+key+": "+err.Error(), key)
		}
		if err := config.SetFlag(&c, key, vals); errors.Is(err, config.ErrNeedsValue) {
			return nil, openai.NewParamError(400, "Invalid admin configuration update: --"+key+" needs a value", key)
		} else if err != nil {
			return nil, openai.NewParamError(400, "Invalid admin configuration update: "+err.Error(), key)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, invalid(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	next := &settings{failureRate: c.FailureInjectionRate, failureTypes: c.FailureTypes, calcName: c.LatencyCalculator,
		latencyParams: c.Latency, calc: cur.calc, fake: c.FakeMetrics}
	if next.latencyParams != cur.latencyParams || next.calcName != cur.calcName {
		calc, err := s.resolve(next.calcName, next.latencyParams)
		if err != nil {
			return nil, openai.NewError(400, "Invalid latency settings: "+err.Error())
		}
		next.calc = calc
	}
	return next, nil
}

// flagValues turns a JSON value into the arguments its flag would get on
// the command line: a string or number as written, an array's scalars one
// by one, an object as its JSON text (--fake-metrics).
func flagValues(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing value")
	}
	switch raw[0] {
	case '"':
		var v string
		err := json.Unmarshal(raw, &v)
		return []string{v}, err
	case '{':
		return []string{string(raw)}, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			v, err := flagValues(bytes.TrimSpace(it))
			if err != nil || len(v) != 1 || (len(it) > 0 && (it[0] == '[' || it[0] == '{')) {
				return nil, errors.New("a list may hold only strings or numbers")
			}
			out = append(out, v[0])
		}
		return out, nil
	case 'n':
		return nil, nil
	}
	return []string{string(raw)}, nil // a number or a boolean, as typed on the command line
}
