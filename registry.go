// Package meshclaims carries what the command-line tools need from the
// repository wherever they run: the claims registry this version of the suite
// was built with, so `meshclaims claims` and `meshclaims report` work from any
// directory (and `go install`ed) without a checkout beside them, and the
// glossary every report links to.
package meshclaims

import _ "embed"

// ClaimsFile is the registry's path in the repository; the embedded copy
// is named by it in errors and in the results it judges.
const ClaimsFile = "testdata/claims.yaml"

// ClaimsYAML is testdata/claims.yaml as built.
//
//go:embed testdata/claims.yaml
var ClaimsYAML []byte

// Glossary is docs/GLOSSARY.md as built: every report writes it beside
// itself (glossary.md) and links to it, so the words are defined offline.
//
//go:embed docs/GLOSSARY.md
var Glossary []byte
