// Package load runs fortio HTTP loads through a fortio client's REST API
// (/fortio/rest/run, synchronous mode) and keeps everything a verdict needs:
//
//   - the raw result JSON exactly as the client returned it, and the exact
//     options that produced it, written next to each other in a raw
//     directory (<name>.json, <name>.options.json);
//   - a typed view of the numbers the claims use (status codes, sockets,
//     actual qps, the latency histogram with fine resolution);
//   - the cause of every -1 (no HTTP response: reset, EOF, refused, timeout,
//     other), read from the client's own log lines for that run, because the
//     result JSON only says "-1";
//   - fortio's silent retries on dead keep-alive sockets ("Closing dead
//     socket"), which hide resets: the request is retried once on a new
//     socket and, when that succeeds, never shows up as an error.
//
// The REST API always allows initial errors, so Run checks the warm-up
// with a preflight of its own. RunFortioLoad instead calls the workload
// client's echo.LoadPath, which runs the load as `fortio load` does: there
// an abort on the warm-up, without -allow-initial-errors, is fortio's.
//
// The transport is the caller's: the Engine takes a base URL and an
// http.RoundTripper, so a Kubernetes port-forward and plain TCP on loopback
// both work. The log source is an interface for the same reason: a pod's
// logs (PodLogs) in a cluster, fortio's in-process logger (CaptureFortioLog)
// on loopback.
package load
