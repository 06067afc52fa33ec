package fortioresult_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
)

// TestRoundTripKeepsEverything: a real fortio file parsed and marshalled
// again is the same JSON, including the fields Result does not type and a
// field a newer fortio might add.
func TestRoundTripKeepsEverything(t *testing.T) {
	path, _ := fortiotest.Run(t, fortiotest.WithDuration(500*time.Millisecond))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(orig, &m); err != nil {
		t.Fatal(err)
	}
	m["FutureFortioField"] = map[string]any{"nested": []any{1.5, "x"}}
	withFuture, _ := json.Marshal(m)

	r, err := fortioresult.Parse("future.json", withFuture)
	if err != nil {
		t.Fatalf("Parse rejected a result with an unknown field: %v", err)
	}
	for _, k := range []string{"FutureFortioField", "ConnReuseRange", "Payload"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("Extra lacks %q; has %v", k, keys(r.Extra))
		}
	}
	for _, k := range []string{"RetCodes", "DurationHistogram", "URL", "error"} {
		if _, ok := r.Extra[k]; ok {
			t.Errorf("typed field %q also in Extra", k)
		}
	}
	again, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	_ = json.Unmarshal(withFuture, &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		for k := range a {
			if !reflect.DeepEqual(a[k], b[k]) {
				t.Errorf("field %s: before %v after %v", k, a[k], b[k])
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				t.Errorf("field %s appeared: %v", k, b[k])
			}
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"empty.json", "  \n", "empty file"},
		{"text.json", "Ended after 1s : 200 calls", "not a fortio result"},
		{"array.json", "[1,2]", "not a fortio result"},
		{"other.json", `{"kind":"Deployment"}`, "missing RetCodes and DurationHistogram"},
		{"nohist.json", `{"RetCodes":{"200":3}}`, "missing DurationHistogram"},
		{"tcp.json", `{"RunType":"TCP","RetCodes":{"OK":3},"DurationHistogram":{"Count":3}}`, `RunType is "TCP", accepted: "HTTP" or a gRPC run`},
		{"failed.json", `{"RunType":"HTTP","error":true,"message":"init error","RetCodes":{},"DurationHistogram":{}}`, "failed to start"},
		{"badcode.json", `{"RetCodes":{"OK":3},"DurationHistogram":{"Count":3}}`, `key "OK" is not an HTTP status code`},
		{"negative.json", `{"RetCodes":{"200":-3},"DurationHistogram":{"Count":3}}`, "counts must be >= 0"},
	}
	for _, c := range cases {
		_, err := fortioresult.Parse(c.name, []byte(c.data))
		if err == nil {
			t.Errorf("%s: accepted %q", c.name, c.data)
			continue
		}
		if !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q should name the file and say %q", c.name, err, c.want)
		}
	}
	_, err := fortioresult.ReadFile(filepath.Join(t.TempDir(), "absent.json"))
	if err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRequestedQPSValue(t *testing.T) {
	for in, want := range map[string]float64{"200": 200, "12.5": 12.5} {
		r := fortioresult.Result{RequestedQPS: in}
		if got, err := r.RequestedQPSValue(); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := (&fortioresult.Result{RequestedQPS: "max"}).RequestedQPSValue(); !errors.Is(err, fortioresult.ErrMaxQPS) {
		t.Errorf("max: %v", err)
	}
	for _, bad := range []string{"", "fast", "-3"} {
		_, err := (&fortioresult.Result{RequestedQPS: bad}).RequestedQPSValue()
		if err == nil || errors.Is(err, fortioresult.ErrMaxQPS) || !strings.Contains(err.Error(), "max") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestResolutionFromRealBuckets: with the recorded Resolution removed (as in
// files of older fortio), the divider is inferred from the real buckets; a
// wrong recorded value is not believed.
func TestResolutionFromRealBuckets(t *testing.T) {
	for _, res := range []float64{0.0001, 0.00005, 0.00001} {
		path, _ := fortiotest.Run(t, fortiotest.WithDuration(500*time.Millisecond), fortiotest.WithQPS(400), fortiotest.WithResolution(res))
		r, err := fortioresult.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, src := r.DurationResolution(); got != res || src != fortioresult.ResolutionRecorded {
			t.Errorf("resolution %v: recorded gives %v (%s)", res, got, src)
		}
		if len(r.DurationHistogram.Data) < 4 {
			t.Logf("resolution %v: only %d buckets, inference not exercised", res, len(r.DurationHistogram.Data))
			continue
		}
		r.Resolution = 0
		if got, src := r.DurationResolution(); got != res || src != fortioresult.ResolutionInferred {
			t.Errorf("resolution %v: inferred %v (%s) from buckets %+v", res, got, src, r.DurationHistogram.Data)
		}
		r.Resolution = 0.5 // a wrong recorded value, e.g. set apart for connections
		if got, src := r.DurationResolution(); got != res || src != fortioresult.ResolutionInferred {
			t.Errorf("resolution %v with wrong recorded 0.5: %v (%s)", res, got, src)
		}
	}
}

func ExampleSummarize() {
	// A real fortio run on loopback, as `fortio load -json` would save it.
	res, err := fortiotest.RunConfig(fortiotest.Config{QPS: 100, Duration: 300 * time.Millisecond, Connections: 2, Resolution: 0.0001})
	if err != nil {
		panic(err)
	}
	data, _ := json.Marshal(res)
	r, err := fortioresult.Parse("run.json", data)
	if err != nil {
		panic(err)
	}
	s := fortioresult.Summarize(r)
	fmt.Println(s.File, keysOf(s.Codes), "sockets", s.Sockets, "of", s.Connections, "connections")
	fmt.Println(s.PercentileSource, "percentiles at", s.ResolutionMs, "ms resolution")
	// Output:
	// run.json [200] sockets 2 of 2 connections
	// fortio percentiles at 0.1 ms resolution
}

func keysOf(m map[string]int64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
