package mode

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want []Mode
	}{
		{"ambient-l4", []Mode{AmbientL4}},
		{"all", All()},
		{"ambient-l7, none,sidecar,none", []Mode{None, Sidecar, AmbientL7}},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseRejectsUnknown(t *testing.T) {
	for _, in := range []string{"bogus", "", "sidecar,ambient", "ALL"} {
		_, err := Parse(in)
		if err == nil {
			t.Fatalf("Parse(%q) accepted a bad value", in)
		}
		if !strings.Contains(err.Error(), "accepted: none, sidecar, ambient-l4, ambient-l7") {
			t.Errorf("error for %q does not list accepted values: %v", in, err)
		}
	}
}
