//go:build tools

// Package tools pins staticcheck (honnef.co/go/tools) for test.sh; see
// hack/staticcheck.sh.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
