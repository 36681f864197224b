// Package node is vipstack's node agent: from the cluster file and the
// node's name it runs everything the node's role needs in one process -
// the VRRP instances with native checks, the API load balancer with its
// VIP redirect on masters, and the cluster DNS on every node - with one
// status report, and applies a changed cluster file without moving VIPs
// whose owner stays eligible.
package node
