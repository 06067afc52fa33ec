package claims_test

// The registry accepts the metrics the judging layer registers; linking it
// into this package's tests registers them for Parse as for the suite.
import _ "github.com/meshclaims/meshclaims/framework/verdict"
