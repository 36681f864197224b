package bgp

import "github.com/vipstack/vipstack/internal/bgpconfig"

// The speaker's configuration is package bgpconfig's, which links no BGP
// implementation; these names keep it the speaker's own.
type (
	Config     = bgpconfig.Config
	Demotion   = bgpconfig.Demotion
	Peer       = bgpconfig.Peer
	BFD        = bgpconfig.BFD
	Route      = bgpconfig.Route
	Attributes = bgpconfig.Attributes
	FieldError = bgpconfig.FieldError
)

// DefaultConnectRetry is bgpconfig.DefaultConnectRetry.
const DefaultConnectRetry = bgpconfig.DefaultConnectRetry

// FieldErrors is bgpconfig.FieldErrors.
func FieldErrors(err error) []*FieldError { return bgpconfig.FieldErrors(err) }
