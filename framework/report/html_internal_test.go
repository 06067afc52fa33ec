package report

import "testing"

// Positive control for otherEnv: a field the template does not name (here
// istio, with its name taken out of shownEnv for the test) is listed.
func TestOtherEnvListsUnnamedFields(t *testing.T) {
	env := Environment{RunID: "x", Istio: "1.29.0"}
	if got := otherEnv(env); len(got) != 0 {
		t.Fatalf("every field is named by the template, got %v", got)
	}
	delete(shownEnv, "istio")
	defer func() { shownEnv["istio"] = true }()
	got := otherEnv(env)
	if len(got) != 1 || got[0] != (envField{"istio", "1.29.0"}) {
		t.Fatalf("got %v", got)
	}
}
