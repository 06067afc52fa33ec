// Package istiod checks what a running istiod proves by itself, before any
// proxy runs: its validating webhook admits the suite's Istio objects and
// refuses broken ones (so the fixtures are valid Istio, not only valid
// YAML); its injector turns a pod of a sidecar namespace into one with
// istio-proxy as a native sidecar carrying the pod's proxy.istio.io/config;
// and its CA signs, over the gRPC API pilot-agent uses, a certificate for
// exactly the service account whose token asks.
//
// Every check reads what istiod answered (the admission response, the
// mutated pod, the signed chain); none waits for the outcome it measures.
package istiod
