// Package kadump writes the files keepalived 2.2.7 writes when it is sent
// its dump signals (keepalived.data on SIGUSR1, keepalived.stats on
// SIGUSR2, keepalived.json on SIGRTMIN+2), from vipstack's own instance
// state, so that keepalived-exporter (github.com/mehdy/keepalived-exporter)
// and the dashboards built on it keep working against `vipstack vrrp`.
// The formats follow keepalived 2.2.7's vrrp_print_data, vrrp_print_stats
// and vrrp_print_json output as measured on a running keepalived 2.2.7.
package kadump
