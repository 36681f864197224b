// Command openshift-peers builds the OpenShift test peers (mdns-publisher,
// and CoreDNS with OpenShift's mdns plugin) from source into the user's
// cache directory, unless already there, and prints their paths. test.sh
// runs it before the tests, so that their first build does not compete for
// the CPUs with timing-sensitive tests; the tests build them on demand too.
package main

import (
	"fmt"
	"os"

	"github.com/vipstack/vipstack/internal/peers"
)

func main() {
	code := 0
	for _, name := range peers.OpenShiftPeers {
		path, err := peers.OpenShiftPeer(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "openshift-peers: %s: %v\n", name, err)
			code = 1
			continue
		}
		fmt.Println(path)
	}
	os.Exit(code)
}
