package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
	"github.com/lensfn/lensfn/runtime/state/statetest"
)

// redisURL is REDIS_URL when set (CI points it at a real redis-server), else the URL of an
// embedded server started once for the package.
func redisURL(t testing.TB) string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	embeddedOnce.Do(func() {
		embedded, embeddedErr = redisstore.StartEmbedded()
	})
	if embeddedErr != nil && t != nil {
		t.Fatal(embeddedErr)
	}
	return embedded.URL()
}

var (
	embeddedOnce sync.Once
	embedded     *redisstore.Embedded
	embeddedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		_ = benchStore.Close()
		if err := dropPrefix(redisURL(nil), benchPrefix); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if embedded != nil {
		embedded.Close()
	}
	os.Exit(code)
}

// uniquePrefix gives each test its own keyspace (and hash tag).
func uniquePrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "lenstest:{" + hex.EncodeToString(b) + "}:"
}

// openStore opens a store with a fresh prefix and deletes its keys after the test.
func openStore(t testing.TB, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	url := redisURL(t)
	if opts.Prefix == "" {
		opts.Prefix = uniquePrefix()
	}
	ctx := context.Background()
	s, err := redisstore.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		if err := dropPrefix(url, opts.Prefix); err != nil {
			t.Error(err)
		}
	})
	return s
}

// dropPrefix removes a test's keys. Only test cleanup scans; the store itself never does.
func dropPrefix(url, prefix string) error {
	c, err := redis.DialURL(url)
	if err != nil {
		return err
	}
	defer c.Close()
	for cursor := "0"; ; {
		reply, err := redis.Values(c.Do("SCAN", cursor, "MATCH", prefix+"*", "COUNT", 1000))
		if err != nil {
			return fmt.Errorf("cleanup of %s: %w", prefix, err)
		}
		var keys []any
		if _, err := redis.Scan(reply, &cursor, &keys); err != nil {
			return fmt.Errorf("cleanup of %s: %w", prefix, err)
		}
		if len(keys) > 0 {
			if _, err := c.Do("UNLINK", keys...); err != nil {
				return err
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store {
		return openStore(t, redisstore.Options{})
	})
}

func TestOpenRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	url := redisURL(t)
	for _, prefix := range []string{"lens:", "lens:{}:", "lens:{v1}"} {
		if _, err := redisstore.Open(ctx, url, redisstore.Options{Prefix: prefix}); err == nil {
			t.Errorf("prefix %q accepted", prefix)
		}
	}
	for name, opts := range map[string]redisstore.Options{
		"log cap 100000":            {LogCap: 100000},
		"negative stream length":    {StreamMaxLen: -1},
		"list cache TTL under 1 ms": {ListCacheTTL: time.Microsecond},
	} {
		if _, err := redisstore.Open(ctx, url, opts); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	_, err := redisstore.Open(ctx, "redis://user:s3cret@[::1:bad/0", redisstore.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL error %v (must not repeat the password)", err)
	}
	_, err = redisstore.Open(ctx, "http://127.0.0.1:1/0", redisstore.Options{})
	if err == nil {
		t.Error("http:// URL accepted")
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = redisstore.Open(short, "redis://127.0.0.1:1/0", redisstore.Options{})
	if err == nil {
		t.Error("unreachable server accepted")
	}
}

func TestObserverSeesOperations(t *testing.T) {
	type call struct {
		op  string
		err error
	}
	var mu sync.Mutex
	var calls []call
	s := openStore(t, redisstore.Options{Observe: func(op string, dur time.Duration, err error) {
		if dur < 0 {
			t.Errorf("%s: negative duration", op)
		}
		mu.Lock()
		calls = append(calls, call{op, err})
		mu.Unlock()
	}})
	ctx := context.Background()
	_, _ = s.Create(ctx, state.Record{Kind: "task", ID: "a", Status: "queued"})
	_, _ = s.Get(ctx, "task", "missing")
	_, _ = s.List(ctx, state.Query{Kind: "task"})
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 3 || calls[0].op != "create" || calls[0].err != nil ||
		calls[1].op != "get" || !errors.Is(calls[1].err, state.ErrNotFound) || calls[2].op != "list" {
		t.Errorf("observed %+v", calls)
	}
}

func TestLogCapOption(t *testing.T) {
	s := openStore(t, redisstore.Options{LogCap: 3})
	ctx := context.Background()
	if err := s.AppendLogs(ctx, "task", "a", "1", "2", "3", "4"); err != nil {
		t.Fatal(err)
	}
	logs, err := s.ReadLogs(ctx, "task", "a")
	if err != nil || strings.Join(logs.Lines, ",") != "2,3,4" || logs.Dropped != 1 {
		t.Errorf("logs %+v, %v", logs, err)
	}
}

func TestEmbeddedServesOtherClients(t *testing.T) {
	e, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.HasPrefix(e.URL(), "redis://127.0.0.1:") {
		t.Errorf("URL %s is not on loopback", e.URL())
	}
	ctx := context.Background()
	a, err := redisstore.Open(ctx, e.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redisstore.Open(ctx, e.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Create(ctx, state.Record{Kind: "task", ID: "shared", Status: "queued"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "task", "shared"); err != nil {
		t.Errorf("second client does not see the record: %v", err)
	}
	// Keys expire with the wall clock, as on a real server.
	if _, err := a.AcquireLease(ctx, "l", "me", 60*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := b.LeaseHolder(ctx, "l"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("lease on the embedded server did not expire: %v", err)
	}
	e.Close()
	e.Close()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := a.Ping(short); err == nil {
		t.Error("Ping succeeds after the embedded server closed")
	}
}

// More than 1000 records in one millisecond reuse seq%1000 and tie on score; listings must
// still return each record exactly once with the right totals.
func TestListWithTiedScores(t *testing.T) {
	s := openStore(t, redisstore.Options{})
	ctx := context.Background()
	created := time.Date(2026, 9, 23, 9, 0, 0, 0, time.UTC)
	const n = 1010
	for i := range n {
		r := state.Record{Kind: "task", ID: fmt.Sprintf("tie%04d", i), Status: "queued", CreatedAt: created,
			Attrs: map[string]string{"model": "m"}, Search: fmt.Sprintf("needle %d", i%2)}
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []state.Query{
		{Kind: "task"},
		{Kind: "task", Status: []string{"queued"}, Attrs: map[string]string{"model": "m"}},
		{Kind: "task", Search: "needle 1", CreatedBefore: created},
	} {
		want := n
		if q.Search != "" {
			want = n / 2
		}
		seen := map[string]bool{}
		for off := 0; off < n; off += 97 {
			q.Offset, q.Limit = off, 97
			p, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != want {
				t.Fatalf("%+v: total %d, want %d", q, p.Total, want)
			}
			for _, r := range p.Records {
				if seen[r.ID] {
					t.Fatalf("%+v: %s listed twice", q, r.ID)
				}
				seen[r.ID] = true
			}
		}
		if len(seen) != want {
			t.Errorf("%+v: %d distinct records over all pages, want %d", q, len(seen), want)
		}
	}
}

func TestProgressCursorValidation(t *testing.T) {
	s := openStore(t, redisstore.Options{})
	for _, bad := range []string{"abc", "1-", "-1", "1-2-3", "$"} {
		_, err := s.ReadProgress(context.Background(), "task", "a", bad, 10, 0)
		if !errors.Is(err, state.ErrInvalid) {
			t.Errorf("cursor %q: %v, want ErrInvalid", bad, err)
		}
	}
}

// listKeys returns the keys under a store's prefix (test inspection only).
func listKeys(t *testing.T, url, prefix string) []string {
	t.Helper()
	c, err := redis.DialURL(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys, err := redis.Strings(c.Do("KEYS", prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, prefix)
	}
	slices.Sort(keys)
	return keys
}

// After every record is deleted, only bookkeeping keys remain: no index, facet, search,
// progress or log key is left behind.
func TestDeleteLeavesNoKeysBehind(t *testing.T) {
	prefix := uniquePrefix()
	s := openStore(t, redisstore.Options{Prefix: prefix, ListCacheTTL: time.Millisecond})
	ctx := context.Background()
	for i := range 20 {
		r, err := s.Create(ctx, state.Record{Kind: "task", ID: fmt.Sprintf("k%02d", i), Status: "queued",
			Attrs: map[string]string{"model": fmt.Sprintf("m%d", i%3), "backend": "b"}, Search: "x"})
		if err != nil {
			t.Fatal(err)
		}
		r.Status = "running"
		r.Attrs["model"] = fmt.Sprintf("n%d", i%4)
		if _, err := s.Update(ctx, r, state.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendProgress(ctx, "task", r.ID, map[string]string{"pct": "1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendLogs(ctx, "task", r.ID, "line"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.List(ctx, state.Query{Kind: "task", Status: []string{"running"}, Attrs: map[string]string{"backend": "b"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := s.Delete(ctx, "task", fmt.Sprintf("k%02d", i), state.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(250 * time.Millisecond) // let the list caches expire
	want := []string{"gen:task", "seq", "statuses:task"}
	if got := listKeys(t, redisURL(t), prefix); !slices.Equal(got, want) {
		t.Errorf("keys left after deleting everything: %v, want only %v", got, want)
	}
}

// TestUnreachableServerIsErrUnavailable: once the server is gone every operation fails with
// state.ErrUnavailable (HTTP 503 upstream), while a refused command does not.
func TestUnreachableServerIsErrUnavailable(t *testing.T) {
	server, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := redisstore.Open(ctx, server.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, "task", "nope"); !errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("a missing record: %v", err)
	}
	server.Close()
	owner := state.ClaimOwner{Instance: "i", Incarnation: "x"}
	for name, op := range map[string]func() error{
		"get":   func() error { _, err := s.Get(ctx, "task", "a"); return err },
		"list":  func() error { _, err := s.List(ctx, state.Query{Kind: "task"}); return err },
		"claim": func() error { _, err := s.Claim(ctx, "k", owner, time.Second); return err },
		"lease": func() error { _, err := s.AcquireLease(ctx, "l", "o", time.Second); return err },
		"ping":  func() error { return s.Ping(ctx) },
	} {
		if err := op(); !errors.Is(err, state.ErrUnavailable) {
			t.Errorf("%s with the server gone: %v, want ErrUnavailable", name, err)
		}
	}
}

// A record whose status or attributes change between List's two round trips (the index pick and
// the read) no longer matches the query, so it is not listed: a sweep over "every running run"
// was handed a run that had just ended and overwrote its outcome.
func TestListLeavesOutARecordThatChangedMeanwhile(t *testing.T) {
	s := openStore(t, redisstore.Options{})
	ctx := context.Background()
	for _, id := range []string{"ends", "moves", "stays"} {
		if _, err := s.Create(ctx, state.Record{Kind: "run", ID: id, Status: "running", Attrs: map[string]string{"pool": "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	change := func(id string, edit func(*state.Record)) {
		r, err := s.Get(ctx, "run", id)
		if err != nil {
			t.Fatal(err)
		}
		edit(&r)
		if _, err := s.Update(ctx, r, state.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	redisstore.SetAfterListPick(func() {
		redisstore.SetAfterListPick(nil)
		change("ends", func(r *state.Record) { r.Status = "succeeded" })
		change("moves", func(r *state.Record) { r.Attrs = map[string]string{"pool": "b"} })
	})
	t.Cleanup(func() { redisstore.SetAfterListPick(nil) })
	p, err := s.List(ctx, state.Query{Kind: "run", Status: []string{"running"}, Attrs: map[string]string{"pool": "a"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 1 || p.Records[0].ID != "stays" || p.Total != 1 {
		t.Fatalf("listed %d records (total %d): %+v; want only the one that still matches", len(p.Records), p.Total, p.Records)
	}
}

// A server that lost the loaded scripts (a restart, SCRIPT FLUSH) still runs them: EVALSHA
// falls back to EVAL on NOSCRIPT.
func TestScriptsRunAfterTheServerLostThem(t *testing.T) {
	s := openStore(t, redisstore.Options{})
	ctx := context.Background()
	c, err := redis.DialURL(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(ctx, state.Record{Kind: "task", ID: "a", Status: "queued"})
	if err != nil {
		t.Fatalf("create after SCRIPT FLUSH: %v", err)
	}
	if _, err := c.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	r.Status = "running"
	if _, err := s.Update(ctx, r, state.UpdateOptions{}); err != nil {
		t.Fatalf("update after SCRIPT FLUSH: %v", err)
	}
	if p, err := s.List(ctx, state.Query{Kind: "task", Status: []string{"running"}}); err != nil || p.Total != 1 {
		t.Fatalf("list after SCRIPT FLUSH: %+v, %v", p, err)
	}
}

// After the server restarts, the pool's idle connections are dead: the first command must not
// be sent on one of them (it would fail as an outage although the server is back).
func TestARestartedServerFailsNoCommand(t *testing.T) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	s, err := redisstore.Open(ctx, "redis://"+m.Addr()+"/0", redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	restartFailsNoCommand(t, s, func() {
		m.Close()
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	})
}

// restartFailsNoCommand leaves several idle connections in s's pool, restarts its server and
// checks that no command after the restart fails (and that no error carries a password).
func restartFailsNoCommand(t *testing.T, s *redisstore.Store, restart func()) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := s.Get(ctx, "task", "x"); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("before the restart: %v", err)
			}
		})
	}
	wg.Wait()
	restart()
	for i := range 4 {
		_, err := s.Get(ctx, "task", "x")
		if !errors.Is(err, state.ErrNotFound) {
			t.Errorf("command %d after the restart: %v, want ErrNotFound", i, err)
		}
		noPassword(t, "after the restart", err)
	}
}

// An exhausted pool makes a caller wait for a connection, up to the caller's deadline (then the
// store is unavailable to it); a caller without a deadline gets the connection once it is free.
func TestAnExhaustedPoolWaitsUpToTheDeadline(t *testing.T) {
	s := openStore(t, redisstore.Options{PoolSize: 1})
	ctx := context.Background()
	held := make(chan error, 1)
	go func() {
		_, err := s.ReadProgress(ctx, "task", "a", "", 10, 1500*time.Millisecond)
		held <- err
	}()
	// Wait until the blocking read holds the only connection.
	for deadline := time.Now().Add(time.Second); ; {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := s.Get(short, "task", "a")
		cancel()
		if errors.Is(err, state.ErrUnavailable) {
			break
		}
		if !errors.Is(err, state.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("a caller with a 100 ms deadline on an exhausted pool: %v, want ErrUnavailable", err)
		}
	}
	if _, err := s.AppendProgress(ctx, "task", "a", map[string]string{"pct": "1"}); err != nil {
		t.Fatalf("a caller without a deadline did not get the connection once free: %v", err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// A blocking progress read longer than a command's reply timeout (3 s) waits for its whole
// BLOCK and returns the entry appended meanwhile.
func TestABlockingReadOutlastsTheReplyTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 3.3 s")
	}
	s := openStore(t, redisstore.Options{})
	ctx := context.Background()
	got := make(chan []state.ProgressEntry, 1)
	failed := make(chan error, 1)
	go func() {
		entries, err := s.ReadProgress(ctx, "task", "a", "0-0", 10, 5*time.Second)
		if err != nil {
			failed <- err
			return
		}
		got <- entries
	}()
	time.Sleep(3300 * time.Millisecond) // past the reply timeout, within the BLOCK
	if _, err := s.AppendProgress(ctx, "task", "a", map[string]string{"pct": "7"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		t.Fatalf("the blocking read: %v", err)
	case entries := <-got:
		if len(entries) != 1 || entries[0].Fields["pct"] != "7" {
			t.Fatalf("the blocking read returned %+v", entries)
		}
	}
}

// A caller that gave up (context cancelled) and a store closed by its owner are not outages; a
// wrong password is refused without repeating it.
func TestCancelledCallerClosedStoreAndWrongPassword(t *testing.T) {
	s := openStore(t, redisstore.Options{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(cancelled, "task", "a"); !errors.Is(err, context.Canceled) || errors.Is(err, state.ErrUnavailable) {
		t.Errorf("a cancelled caller: %v, want context.Canceled and no ErrUnavailable", err)
	}

	e, err := redisstore.StartEmbeddedWithPassword("pa55word")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	good, err := redisstore.Open(ctx, e.URL(), redisstore.Options{})
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	defer good.Close()
	if _, err := good.Incr(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if _, err := redisstore.Open(ctx, "redis://:wr0ngpass@"+e.Addr()+"/0", redisstore.Options{}); err == nil || strings.Contains(err.Error(), "wr0ngpass") {
		t.Errorf("a wrong password: %v (must fail without repeating it)", err)
	}
	_ = good.Close()
	if _, err := good.Incr(ctx, "n"); err == nil || errors.Is(err, state.ErrUnavailable) {
		t.Errorf("a closed store: %v, want an error that is not ErrUnavailable", err)
	}
}
