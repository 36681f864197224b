// Package clusterstatus is the cluster view of `vipstack status --cluster`:
// it merges what every node reports (or why a node did not answer) into one
// view per VIP (who holds it, every node's state and effective priority
// with its failing checks, VRID conflicts, silent nodes), prints it as a
// table or JSON, and says what is wrong. It gathers the reports from a
// cluster file's nodes (their status on ports.status, which it also
// serves, to those nodes only) or, in Kubernetes, from the agents' status
// Leases and the LoadBalancer Services.
package clusterstatus
