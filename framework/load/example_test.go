package load_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/load"
)

// A load through a fortio client's REST API on loopback: the client is
// fortio's own REST handler, the target fortio's echo server injecting 503s.
// In a cluster, BaseURL is a port-forward to the client pod and Logs is
// load.PodLogs{...}.
func ExampleEngine_Run() {
	listen := func(h http.Handler) string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		go http.Serve(ln, h) //nolint:gosec // example
		return ln.Addr().String()
	}
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", os.TempDir())
	client := listen(mux)
	echo := listen(http.HandlerFunc(fhttp.EchoHandler))

	raw, _ := os.MkdirTemp("", "raw")
	defer os.RemoveAll(raw)
	e, err := load.New(load.Config{
		BaseURL: "http://" + client + "/fortio/",
		Logs:    load.CaptureFortioLog(nil),
		RawDir:  raw,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// fortio's REST handler prints a text summary on the client's stdout;
	// in-process, that is this program's: silence it for the example output.
	stdout := os.Stdout
	os.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	run, err := e.Run(context.Background(), "example", load.Spec{
		URL: "http://" + echo + "/?status=503:50", QPS: 100, Connections: 2,
		Duration: 500 * time.Millisecond, AllowInitialErrors: true,
	})
	os.Stdout = stdout
	if err != nil {
		fmt.Println(err)
		return
	}
	codes := run.Result.RetCodes
	fmt.Println("only 200 and 503:", codes[200]+codes[503] == run.Result.Requests())
	fmt.Println("socket errors:", run.SocketErrors(), "causes:", len(run.Causes))
	_, err = os.Stat(raw + "/example.json")
	fmt.Println("raw kept:", err == nil)
	// Output:
	// only 200 and 503: true
	// socket errors: 0 causes: 0
	// raw kept: true
}
