// Package keepalived reads keepalived.conf files into a validated, typed
// model, so vipstack can run unchanged keepalived 2.2.7 configurations for
// VRRP (RFC 3768 for version 2, RFC 5798 for version 3).
//
// # Syntax
//
// The reader follows keepalived's line-based format: "#" and "!" start a
// comment anywhere outside double quotes (also after a backslash: keepalived
// 2.2.7's VRRP process reads "auth_pass ab\#cd" as "ab"), words are
// separated by blanks, a double-quoted string is one word, and "{" / "}"
// open and close blocks. An unquoted brace is a word of its own even where
// it touches another word ("vrrp_instance A{", "track_script {chk}",
// "auth_pass a{b" is auth_pass a and a block), as keepalived 2.2.7 reads
// it; include patterns are not split. A block may open on the keyword's line or alone on
// the next line, and several statements may share a line, as in
// "track_script { chk }". Script and notify command lines are split again
// the way keepalived does (see SplitCommand).
//
// # Supported subset
//
//   - global_defs: router_id, enable_script_security, script_user,
//     vrrp_version, vrrp_garp_master_delay, vrrp_garp_master_repeat,
//     vrrp_garp_master_refresh, vrrp_garp_master_refresh_repeat,
//     vrrp_garp_interval, vrrp_gna_interval, max_auto_priority,
//     vrrp_startup_delay, dynamic_interfaces [allow_if_changes],
//     vrrp_rt_priority, vrrp_priority, vrrp_no_swap, vrrp_rlimit_rttime
//     (applied to the engine process by package sched with keepalived's
//     rules: sched.ForVRRP), notification_email,
//     notification_email_from, smtp_server, smtp_helo_name,
//     smtp_connect_timeout, smtp_alert, smtp_alert_vrrp, no_email_faults
//     (SMTP alerts on state changes), smtp_alert_checker, checker_no_swap
//     and default_interface (recorded, no effect: keepalived uses them
//     for its checker and static addresses), vrrp_mcast_group4 and
//     vrrp_mcast_group6 (the group multicast adverts go to and that is
//     joined), vrrp_check_unicast_src, checker_rlimit_rttime and
//     bfd_rlimit_rttime (recorded; vipstack has no checker or BFD
//     process, its checks run in the engine process). max_auto_priority
//     is accepted and does nothing more: keepalived raises its realtime
//     priority by itself after late timers, up to that value; vipstack
//     keeps vrrp_rt_priority and reads what queued up after a late timer
//     before acting on it (engine.stallThreshold). Repeated
//     global_defs blocks merge. dynamic_interfaces changes nothing: vipstack
//     always runs an instance whose interface does not exist in FAULT
//     until the interface is created (and builds it anew when its
//     interface is deleted and created again), which keepalived 2.2.7 does
//     only with dynamic_interfaces; without it keepalived exits at start.
//   - vrrp_script: script, interval, timeout (default: the interval),
//     weight [reverse], rise, fall, user, init_fail. Unlike keepalived 2.2.7,
//     interval and timeout may be fractional; a warning says so.
//   - vrrp_instance: state, interface, virtual_router_id, priority,
//     advert_int, version, nopreempt, preempt, preempt_delay,
//     authentication { auth_type PASS; auth_pass }, virtual_ipaddress and
//     virtual_ipaddress_excluded entries
//     "ADDR[/LEN] [brd ADDR] [dev IF] [scope SCOPE] [label LABEL] [-nodad] [noprefixroute]",
//     unicast_src_ip, unicast_peer, track_script { NAME [weight N] },
//     track_interface { IF [weight N] }, notify_master, notify_backup,
//     notify_fault, notify_stop, notify, garp_master_delay,
//     garp_master_repeat, garp_master_refresh, garp_master_refresh_repeat,
//     dont_track_primary, accept, no_accept, smtp_alert, mcast_src_ip (the
//     same setting as unicast_src_ip, as in keepalived), check_unicast_src,
//     use_vmac [NAME], vmac_xmit_base, track_process { NAME [weight N] }.
//   - vrrp_track_process: process NAME [PARAMS...], param_match
//     [initial|partial], full_command, weight [reverse], quorum,
//     quorum_max, fork_delay, terminate_delay, delay.
//     Notify lines may name the user and group the script runs as after
//     the command: notify_master "/path/script arg" USER [GROUP].
//   - vrrp_sync_group: group { INSTANCE ... }, track_script, notify_*.
//
// Defaults are keepalived's. The VRRP version of an instance is its
// version, else global vrrp_version, else 3 for IPv6 and 2 for IPv4;
// an explicit version 2 with IPv6 addresses is an error; authentication in
// a version 3 instance (OpenShift writes it into its IPv6 instances) is
// ignored with a warning, as keepalived 2.2.7 runs it. Where keepalived
// silently changes a setting (nopreempt with priority 255 or state MASTER,
// preempt_delay with nopreempt or state MASTER, tracking the instance's own
// interface) the model does the same and a
// warning says so.
//
// # Errors
//
// Every keyword outside this subset is an error, never ignored:
//
//	/etc/keepalived/keepalived.conf:12: keyword "virtual_server" is not supported by vipstack
//	/etc/keepalived/keepalived.conf:20: unknown keyword "foo" in vrrp_instance (accepted: state, interface, ...)
//
// Parse and Load collect all errors (each an *Error naming file and line,
// the bad value and what is accepted), join up to 20 of them, and return a
// nil Config. Non-fatal notes, such as an auth_pass longer than the 8 bytes
// sent on the wire, are returned in Config.Warnings.
//
// # Writing and building
//
// Format is the one writer of keepalived.conf text: Parse reads its output
// back into the same model. Code that builds a configuration starts from
// NewConfig, NewScript and NewInstance (keepalived's defaults) and checks
// it with Validate, which applies the reader's rules to the model.
//
// # Includes
//
// "include PATTERN" may appear on any line, at the top level or inside a
// block, as in keepalived, and is replaced by the matching files' lines. A
// relative pattern is relative to the directory of the file that contains
// it. Patterns use path.Match globs (* ? [...]), sorted; as in keepalived
// (glibc's glob), a name starting with "." is matched only by a pattern
// component starting with "." (conf.d/*.conf skips conf.d/.x.conf and a
// ConfigMap's ..data directory); brace expressions
// and the includer/includem/... variants are rejected. A glob that matches
// nothing is a warning, a plain path that does not exist an error. A
// directory, a file that is not regular, or one with an execute bit is
// skipped with a warning, as keepalived 2.2.7 skips it ("not a regular
// non-executable file - skipping"; keepalived -t exits 0 there, --check
// exits 5 on the warning). Includes
// nest at most 8 deep, at most 256 files are read, each at most 1 MiB, and
// a file including itself (directly or not) is an error. Config.Files lists
// every file read, for reload watching.
//
// Conditional lines are read as keepalived reads them: "@ID line" only when
// ID is the config ID (ParseID, LoadID; keepalived's -i, default the host
// name), "@^ID line" only when it is not. The rest of keepalived's
// preprocessor ($NAME definitions, ~SEQ, trailing-backslash continuation)
// is not supported and rejected,
// and so is a line using one of its builtin definitions ($_PWD, ${_PWD},
// ${_INSTANCE}, ${_RANDOM}, ${_HASH}, ${_BANG}), which keepalived 2.2.7
// expands anywhere on a line, inside quotes too: read as text, they gave
// another password or script path than keepalived's.
package keepalived
