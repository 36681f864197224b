// Package track runs a health check on a schedule and turns its results into
// an up/down state with rise/fall hysteresis, as keepalived's vrrp_script
// (keepalived.conf(5), "VRRP script(s)"; keepalived 2.2.7
// vrrp_script_child_thread). Checks are probes: a script here (ScriptCheck,
// via package script), TCP and HTTP checks later.
//
// The state rules are keepalived's, in Hysteresis. The schedule, in Tracker,
// runs on an injected clock so tests drive it with clock.NewFake.
package track
