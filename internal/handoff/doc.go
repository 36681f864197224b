// Package handoff passes a node's VRRP mastership from the agent that
// serves the node to its successor on the same node, so that a rolling
// update of the agent (a DaemonSet with surge) moves no address.
//
// The serving agent holds an abstract Unix socket, shared by every process
// in the node's network namespace and freed by the kernel when the holder
// dies, so that it is also the lock that keeps two agents from serving one
// node. See docs/design/handoff.md.
package handoff
