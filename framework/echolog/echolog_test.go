package echolog

import (
	"strings"
	"testing"
)

func TestParseErrorAnswers(t *testing.T) {
	log := `2026-12-01T11:52:03.120418893Z {"time":"2026-12-01T11:52:03.12Z","level":"INFO","msg":"listening","role":"echo","name":"http-echo","addr":"[::]:8080"}
2026-12-01T11:52:09.004113270Z {"time":"2026-12-01T11:52:09.004Z","level":"INFO","msg":"error answer","role":"echo","method":"GET","uri":"/?status=403","status":403,"remote":"127.0.0.6:51234"}
2026-12-01T11:52:09.104113270Z 11:52:09.104 r1 [WRN] fortio's own line, not JSON
`
	got, err := ParseErrorAnswers(log)
	if err != nil || len(got) != 1 || got[0].Status != 403 || got[0].URI != "/?status=403" || got[0].Remote != "127.0.0.6:51234" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := ParseErrorAnswers(`2026-12-01T11:52:09Z {"msg":"error answer","uri":"/"}`); err == nil || !strings.Contains(err.Error(), "without a status") {
		t.Errorf("line without status: %v", err)
	}
}
