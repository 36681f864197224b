// Package clusterstatus is the cluster view of `vipstack status --cluster`:
// it merges what every node's status endpoint reports (or why a node did
// not answer) into one view per VIP (who holds it, every node's state and
// effective priority with its failing checks, VRID conflicts, silent
// nodes), prints it as a table or JSON, and says what is wrong. It also
// fetches the reports of a cluster file's nodes and serves a node's status
// to them.
package clusterstatus
