package localk8s

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestSupervisorStopsInReverseOrderAndKillsStubbornProcesses(t *testing.T) {
	dir := t.TempDir()
	s := NewSupervisor(dir)
	polite, err := s.Start(Component{Name: "polite", Path: "/bin/sleep", Args: []string{"60"}, StopTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Negative control for the SIGKILL path: this one ignores SIGTERM.
	stubborn, err := s.Start(Component{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", `trap "" TERM; echo $((40+2)); while :; do sleep 0.1; done`}, StopTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The trap must be set before SIGTERM arrives. The shell prints 42,
	// which its command line (in the log's header) does not contain.
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(stubborn.LogPath); strings.Contains(string(b), "\n42\n") {
			break
		}
		if i == 100 {
			t.Fatal("the stubborn shell never got ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := s.Running(); len(got) != 2 || got[0] != polite || got[1] != stubborn {
		t.Fatalf("running %v", got)
	}
	err = s.StopAll()
	if err == nil || !strings.Contains(err.Error(), "stubborn") || !strings.Contains(err.Error(), "ignored SIGTERM") {
		t.Errorf("StopAll error %v, want it to name the stubborn process", err)
	}
	for _, p := range []*Process{polite, stubborn} {
		if done, _ := p.Exited(); !done {
			t.Errorf("%s still running", p.Name)
		}
	}
	if len(s.Running()) != 0 {
		t.Error("stopped processes still listed")
	}
	log, err := os.ReadFile(stubborn.LogPath)
	if err != nil || !strings.Contains(string(log), "starting /bin/sh") {
		t.Errorf("log %q: %v", log, err)
	}
	if _, err := s.Start(Component{Name: "missing", Path: "/nonexistent/binary"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("starting a missing binary: %v", err)
	}
}
