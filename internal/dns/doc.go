// Package dns runs CoreDNS embedded as a library, with CoreDNS's standard
// plugins (all of its plugin.cfg but those Refused names, which need cloud
// SDKs or tracing libraries) and vipstack's own clusterdns and mdns plugins (mdns answers OpenShift's
// "mdns DOMAIN 0 CLUSTER ADDRESS" line from a browse-only mDNS browser; see
// package mdnsplugin), in an explicit, tested order (Directives). DNS
// itself is RFC 1034/1035; the plugins cite their own.
//
// # Process-wide state
//
// CoreDNS keeps its directive order, its plugin table, Caddy's event hooks
// and the -conf flag that the reload plugin reads in process-wide variables,
// and plugins register metrics on Prometheus's default registry. NewServer
// sets all of them once; a process has one Server. vipstack's own code keeps
// no package-level state: everything NewServer configures comes from its
// Options.
//
// # How a live registry reaches the plugin
//
// A setup function registered with CoreDNS runs for every clusterdns block
// at start and again after every reload, and it only sees the Corefile. So
// NewServer registers clusterdns.NewSetup(opts.Registry): a closure that
// captures the caller's RegistryFunc and asks it, per block, for the
// discovery.Registry of the block's zone. The node agent (or `vipstack dns`
// with an mDNS source) feeds that registry; the plugin reads it on every
// query. Nothing is looked up by name in a package-level table, and a reload
// hands the new plugin instance the same registry.
//
// # coremain
//
// The prometheus plugin imports coremain, whose init registers CoreDNS's
// command-line flags (-conf, -p, -version, ...) on the standard flag set and
// Caddyfile loaders that read -conf or ./Corefile. vipstack never parses the
// standard flag set (its commands use private flag sets), so those flags do
// nothing, except that Start sets -conf to the Corefile's path: that is where
// the reload plugin's loader reads the file it compares and restarts with.
//
// # Ports another process holds
//
// CoreDNS sets SO_REUSEPORT on its listeners, so a second server of the
// same user that sets it too (another vipstack dns, an old CoreDNS) could
// listen on the same address and port, the kernel splitting the queries
// between them. Start, and every restart of the reload plugin (through the
// instance's OnRestart callbacks), first binds each address the
// Corefile will listen on without SO_REUSEPORT, on the sockets its
// transport uses (UDP and TCP for dns://, TCP for grpc://, tls:// and
// https://, UDP for quic:// and https3://), and
// refuses the Corefile if that fails with "address already in use"
// (checkListeners). Addresses overlapping what the running Corefile
// listens on are not probed on a reload.
//
// # Reloads
//
// A reload (the reload plugin) goes through the same checks as Start:
// Validate (braces, unknown plugins, the lint checks) and checkListeners
// run in the instance's OnRestart callbacks, before Caddy sets the new
// Corefile up, so an edit Start would refuse (a hosts line whose address
// does not parse, which CoreDNS would silently drop; a stray '}') fails
// the reload with the file, line and bad value in the log, and the running
// Corefile keeps serving. Server.Reload does the same on demand (CoreDNS
// reloads on SIGUSR1; an embedding command calls Reload on its signal),
// returning the error instead of logging it.
package dns
