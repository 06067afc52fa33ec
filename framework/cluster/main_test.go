package cluster

import (
	"os"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }
