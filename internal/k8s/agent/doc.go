// Package agent is vipstack's Kubernetes node agent: it watches the VIP
// groups its node belongs to, their Services and those Services'
// EndpointSlices, lays out its share of VRRP (RFC 5798) instances (PlanNode,
// pure) and runs them with the native engine, reloading it when the plan
// changes; instances whose configuration did not change keep running
// untouched. Services with externalTrafficPolicy Local are held only by
// nodes with a ready endpoint.
package agent
