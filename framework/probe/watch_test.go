package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
)

// The host side of a watch against the real in-pod handler on loopback:
// the callback makes the change as soon as the first line arrives (as the
// endpoint-change step does), sees the change, and stops the watch; a
// watch the callback never stops ends with ErrWatchEnded.
func TestWatchViaMakesTheChangeFromTheCallback(t *testing.T) {
	var failing atomic.Bool
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fhttp.DebugHandler(w, r)
	}))
	defer backend.Close()
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	ctx := context.Background()
	var seen []wp.Change
	err := WatchVia(ctx, handler.URL, backend.URL+"/debug", time.Second, 20*time.Second, 5, func(c wp.Change) (bool, error) {
		seen = append(seen, c)
		if len(seen) == 1 {
			failing.Store(true)
		}
		return len(seen) == 2, nil
	})
	if err != nil || len(seen) != 2 || seen[1].Answer != "http-503" || seen[1].Before == 0 {
		t.Fatalf("watch: %v, lines %+v", err, seen)
	}
	failing.Store(false)
	err = WatchVia(ctx, handler.URL, backend.URL+"/debug", time.Second, 200*time.Millisecond, 1, func(wp.Change) (bool, error) { return false, nil })
	if !errors.Is(err, ErrWatchEnded) {
		t.Errorf("a watch nobody stops: %v, want ErrWatchEnded", err)
	}
	boom := errors.New("boom")
	if err := WatchVia(ctx, handler.URL, backend.URL+"/debug", time.Second, 20*time.Second, 1, func(wp.Change) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("the callback's error: %v", err)
	}
}

// The offset of the real handler on this host is zero within the
// uncertainty; a handler whose clock runs 5 s ahead (the wire shape of
// wp.Clock, shifted) is found 5 s ahead, so the estimate is not a constant.
func TestClockOffset(t *testing.T) {
	ctx := context.Background()
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	off, unc, err := ClockOffset(ctx, handler.URL, 5)
	if err != nil {
		t.Fatal(err)
	}
	if off > unc || off < -unc {
		t.Errorf("same host: offset %s beyond its uncertainty %s", off, unc)
	}
	ahead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(wp.Clock{UnixNano: time.Now().Add(5 * time.Second).UnixNano()})
	}))
	defer ahead.Close()
	off, unc, err = ClockOffset(ctx, ahead.URL, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := off - 5*time.Second; d > unc || d < -unc {
		t.Errorf("5 s ahead: offset %s ± %s", off, unc)
	}
	if _, _, err := ClockOffset(ctx, handler.URL, 0); err == nil {
		t.Error("0 samples accepted")
	}
}
