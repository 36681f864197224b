// Package alerts checks what the Helm chart ships for Prometheus and
// Grafana: the PrometheusRule's alerts, run through promtool's rule unit
// tests, and the dashboard's queries, whose every metric a live vipstack
// must export. It also renders each panel's query against a live scrape
// as a table, for docs/operate.md (Grafana is not run here).
package alerts
