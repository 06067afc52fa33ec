package fortiotest_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
)

func TestRunWritesFortioJSON(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithDuration(300*time.Millisecond), fortiotest.WithLabels("a b/c"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(res, "", "  ")
	if string(data) != string(want) {
		t.Errorf("file is not fortio's indented JSON of the result")
	}
	if strings.ContainsAny(path[strings.LastIndex(path, "/")+1:], " ") || !strings.Contains(path, "a_b_c-") {
		t.Errorf("file name %q not derived from labels", path)
	}
	if res.RunType != "HTTP" || res.Labels != "a b/c" || res.RetCodes[200] == 0 {
		t.Errorf("run: type %q labels %q codes %v", res.RunType, res.Labels, res.RetCodes)
	}
}

func TestRunConfigRejects(t *testing.T) {
	for _, c := range []struct {
		cfg  fortiotest.Config
		want string
	}{
		{fortiotest.Config{Connections: 0, Duration: time.Second}, "connections 0"},
		{fortiotest.Config{Connections: 1}, "duration 0s"},
		{fortiotest.Config{Connections: 1, Duration: time.Second, QPS: -2}, "qps -2"},
	} {
		if _, err := fortiotest.RunConfig(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
