package fn

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// storeHealth logs each outage of the state store once: when the first operation finds it
// unreachable and when the first one succeeds again. Meanwhile requests answer 503 and events
// are redelivered without a log line each.
type storeHealth struct {
	log  *Logger
	down atomic.Bool // fast path: nothing to do while the store answers

	mu        sync.Mutex
	downSince time.Time
	failed    int
}

func (h *storeHealth) observe(op string, err error) {
	if err == nil && !h.down.Load() {
		return
	}
	if err != nil && !errors.Is(err, state.ErrUnavailable) {
		return // the store answered: a refused command says nothing about reachability
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil && h.downSince.IsZero():
		h.downSince, h.failed = time.Now(), 1
		h.down.Store(true)
		h.log.Errorw("state store unavailable: API routes answer 503 and events are redelivered until it is back",
			"op", op, "error", err)
	case err != nil:
		h.failed++
	case !h.downSince.IsZero():
		h.log.Infow("state store reachable again", "outage", time.Since(h.downSince).Round(time.Millisecond).String(),
			"failedOperations", h.failed)
		h.downSince, h.failed = time.Time{}, 0
		h.down.Store(false)
	}
}

// mentionsStoreOutage says whether a log line's key-value pairs carry a store-outage error,
// which storeHealth has already logged.
func mentionsStoreOutage(kv []any) bool {
	for _, v := range kv {
		if err, ok := v.(error); ok && errors.Is(err, state.ErrUnavailable) {
			return true
		}
	}
	return false
}
