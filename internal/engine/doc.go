// Package engine runs the VRRP instances of a keepalived.conf: it owns the
// raw sockets, the timers, the virtual addresses and their announcements,
// the tracked scripts and interfaces, the notify scripts, reloads, metrics
// and the status report. The protocol decisions themselves are made by the
// pure state machine in package fsm; the engine feeds it events and carries
// out the actions it returns.
//
// Everything that changes state happens on one goroutine (the loop), so no
// instance is ever seen half-updated. Packets are read by one goroutine per
// socket and handed to the loop; trackers and link watchers do the same.
// The reader itself drops (and counts) what fails the checks that need no
// configuration (multicast TTL, length, version, type, checksum), so a
// flood of such packets never queues in front of the loop's timers.
//
// Receive checks done here (they need the configuration): TTL / hop limit
// 255 (RFC 5798 section 7.1), the interface the packet arrived on, the VRID,
// unicast peers, the version, v2 authentication (RFC 3768 section 5.3.6),
// the v2 advertisement interval and the address list. A packet that fails
// one is dropped and counted by reason; one that names our VRID but
// disagrees on version, authentication, interval or addresses is a VRID
// conflict, logged, counted and shown in the status.
//
// A tracked script counts as keepalived 2.2.7 counts it (measured): until
// its first result it adds nothing and takes nothing away, and an instance
// that tracks it with weight 0 waits in INIT (no state change, no notify
// script) and starts on that result, in BACKUP after a success and in
// FAULT after a failure; after that its rise and fall counts decide
// (package track), one success being enough at start. In a
// vrrp_sync_group the whole group waits in INIT for such a member's first
// result, and then starts together. The notify scripts run with
// keepalived's arguments and on the same transitions, shutdown included
// (notify_stop and notify INSTANCE name STOP priority, also for an
// instance stopped while it waited in INIT, and the group's GROUP name
// STOP 0).
//
// A master adds its VIPs after recording them in the ledger
// (netif.Ledger), and removes them when it leaves MASTER. A VIP let go is
// then watched for ten seconds (checkReleased): looked for on its
// interface at once and every second, removed again and logged ("removed a
// VIP still on its interface after its instance let it go") whenever it is
// found there while the instance is not master, and kept in the ledger
// meanwhile; a removal that failed is retried until it succeeds. So a
// removal lost anywhere between the engine and the kernel (an add landing
// after it, a delete the kernel did not apply) cannot leave a VIP on a
// backup for good. Only VIPs this engine held are watched, and only for
// that while: as keepalived 2.2.7 does (measured), a VIP another program
// adds on a backup's interface later is left alone.
//
// A VIP that something else removes from a master's interface (an address
// watcher reports every removal) makes that master step down as keepalived
// 2.2.7 does (measured): a priority-0 advertisement and BACKUP, so that the
// best backup takes the VIPs after its Skew_Time, or this node again after
// its own when no backup does (fsm.Machine.Resign). Before, the master went
// on advertising without the VIP and no node answered for it. An IPv4
// instance whose interface loses its last IPv4 address (it sends from the
// interface's primary address) is in FAULT until the interface has one
// again, and then sends from the new one, as keepalived does.
package engine
