package keepalived

import "strings"

// Keyword lists, used for error messages. Accepted lists are ", " separated
// and printed as they are; unsupported lists name keepalived 2.2.7 keywords
// that vipstack recognises but does not implement, so that they get "not
// supported by vipstack" rather than "unknown keyword". They are constants
// so that the package keeps no mutable state.
const (
	topAccepted    = "global_defs, vrrp_script, vrrp_track_process, vrrp_instance, vrrp_sync_group, include"
	topUnsupported = "virtual_server virtual_server_group static_ipaddress static_routes static_rules " +
		"track_group linkbeat_interfaces vrrp_track_file track_file garp_group " +
		"bfd_instance interface_up_down_delays net_namespace net_namespace_ipvs namespace_with_ipsets " +
		"instance use_pid_dir linkbeat_use_polling child_wait_time"

	globalAccepted = "router_id, enable_script_security, script_user, vrrp_version, " +
		"vrrp_garp_master_delay, vrrp_garp_master_repeat, vrrp_garp_master_refresh, " +
		"vrrp_garp_master_refresh_repeat, vrrp_garp_interval, vrrp_gna_interval, " +
		"max_auto_priority, vrrp_startup_delay, dynamic_interfaces, vrrp_rt_priority, vrrp_priority, vrrp_no_swap, " +
		"vrrp_rlimit_rttime, checker_rlimit_rttime, bfd_rlimit_rttime, notification_email, " +
		"notification_email_from, smtp_server, smtp_helo_name, smtp_connect_timeout, smtp_alert, " +
		"smtp_alert_vrrp, smtp_alert_checker, no_email_faults, checker_no_swap, default_interface, " +
		"vrrp_mcast_group4, vrrp_mcast_group6, vrrp_check_unicast_src"
	globalUnsupported = "bfd_cpu_affinity bfd_no_swap bfd_priority bfd_process_name " +
		"bfd_rt_priority checker_cpu_affinity checker_log_all_failures checker_priority " +
		"checker_process_name checker_rt_priority config_save_dir data_use_instance " +
		"dbus_service_name disable_local_igmp enable_dbus " +
		"enable_snmp_checker enable_snmp_rfc enable_snmp_rfcv2 enable_snmp_rfcv3 enable_snmp_vrrp " +
		"enable_traps fifo_write_vrrp_states_on_reload include_check log_unknown_vrids lvs_flush " +
		"lvs_flush_on_stop lvs_netlink_cmd_rcv_bufs lvs_netlink_cmd_rcv_bufs_force " +
		"lvs_netlink_monitor_rcv_bufs lvs_netlink_monitor_rcv_bufs_force lvs_notify_fifo " +
		"lvs_notify_fifo_script lvs_sync_daemon lvs_timeouts lvs_id min_auto_priority_delay nftables " +
		"nftables_counters nftables_ifindex nftables_ipvs nftables_ipvs_priority " +
		"nftables_ipvs_start_fwmark nftables_priority no_checker_emails " +
		"notify_fifo notify_fifo_script " +
		"process_monitor_rcv_bufs process_monitor_rcv_bufs_force process_name process_names " +
		"random_seed reload_check_config reload_file reload_repeat reload_time_file " +
		"rs_init_notifies shutdown_script shutdown_script_timeout snmp_socket startup_script " +
		"startup_script_timeout tmp_config_directory umask vmac_addr_prefix vmac_prefix " +
		"vrrp_cpu_affinity vrrp_down_timer_adverts vrrp_garp_extra_if " +
		"vrrp_garp_lower_prio_delay vrrp_garp_lower_prio_repeat vrrp_higher_prio_send_advert " +
		"vrrp_ipsets vrrp_iptables vrrp_lower_prio_no_advert " +
		"vrrp_min_garp vrrp_netlink_cmd_rcv_bufs vrrp_netlink_cmd_rcv_bufs_force " +
		"vrrp_netlink_monitor_rcv_bufs vrrp_netlink_monitor_rcv_bufs_force " +
		"vrrp_notify_fifo vrrp_notify_fifo_script vrrp_notify_priority_changes " +
		"vrrp_process_name vrrp_rx_bufs_multiplier " +
		"vrrp_rx_bufs_policy vrrp_skip_check_adv_addr vrrp_strict net_namespace " +
		"net_namespace_ipvs namespace_with_ipsets instance use_pid_dir linkbeat_use_polling " +
		"child_wait_time"

	scriptAccepted = "script, interval, timeout, weight, rise, fall, user, init_fail"

	processAccepted = "process, param_match, weight, quorum, quorum_max, fork_delay, terminate_delay, delay, full_command"

	instanceAccepted = "state, interface, virtual_router_id, priority, advert_int, version, " +
		"nopreempt, preempt, preempt_delay, authentication, virtual_ipaddress, " +
		"virtual_ipaddress_excluded, unicast_src_ip, unicast_peer, track_script, track_interface, " +
		"notify_master, notify_backup, notify_fault, notify_stop, notify, garp_master_delay, " +
		"garp_master_repeat, garp_master_refresh, garp_master_refresh_repeat, dont_track_primary, " +
		"accept, no_accept, smtp_alert, mcast_src_ip, check_unicast_src, use_vmac, vmac_xmit_base, track_process"
	instanceUnsupported = "use_vmac_addr use_ipvlan native_ipv6 vrf " +
		"track_file track_bfd mcast_dst_ip track_src_ip " +
		"unicast_fault_no_peer unicast_ttl old_unicast_checksum garp_lower_prio_delay " +
		"garp_lower_prio_repeat garp_extra_if down_timer_adverts lower_prio_no_advert " +
		"higher_prio_send_advert promote_secondaries virtual_routes virtual_rules " +
		"skip_check_adv_addr strict_mode debug notify_master_rx_lower_pri notify_priority_changes " +
		"notify_deleted kernel_rx_buf_size linkbeat_use_polling lvs_sync_daemon_interface"

	authAccepted = "auth_type, auth_pass"

	syncAccepted    = "group, track_script, notify_master, notify_backup, notify_fault, notify_stop, notify"
	syncUnsupported = "track_interface track_file track_process track_bfd notify_deleted " +
		"notify_priority_changes smtp_alert global_tracking sync_group_tracking_weight"

	vipAccepted    = "brd, dev, scope, label, -nodad, noprefixroute"
	vipUnsupported = "peer home mngtmpaddr autojoin no_track preferred_lft use_vmac track_group"
)

// lvsKeywords configure IPVS (LVS) or its sync daemon: refused with a
// message saying why.
const lvsKeywords = "virtual_server virtual_server_group lvs_sync_daemon lvs_sync_daemon_interface lvs_timeouts " +
	"lvs_flush lvs_flush_on_stop lvs_id lvs_notify_fifo lvs_notify_fifo_script net_namespace_ipvs " +
	"lvs_netlink_cmd_rcv_bufs lvs_netlink_cmd_rcv_bufs_force lvs_netlink_monitor_rcv_bufs " +
	"lvs_netlink_monitor_rcv_bufs_force nftables_ipvs nftables_ipvs_priority nftables_ipvs_start_fwmark"

// repeatableFlags are flags keepalived 2.2.7 takes again without a word;
// vipstack warns about the repeat and reads it once.
const repeatableFlags = "nopreempt preempt accept no_accept dont_track_primary"

// inList reports whether word is one of the words of list, which are
// separated by spaces or ", ". It allocates nothing: it runs for every
// keyword of a file (the slice of words each time was 11.5 MB of garbage
// for a file of 1,000 instances, docs/design/memory.md).
func inList(list, word string) bool {
	for w := range strings.FieldsFuncSeq(list, func(r rune) bool { return r == ' ' || r == ',' }) {
		if w == word {
			return true
		}
	}
	return false
}
