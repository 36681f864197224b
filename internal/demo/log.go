package demo

import (
	"io"
	"log"
)

// discardLog silences net/http's server error log (TLS handshakes cut
// short by health checks are expected).
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
