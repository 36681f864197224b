// Package lbfiles runs haproxy.cfg files that other people wrote for their
// own deployments (kept in testdata with their source named, addresses and
// paths changed to the test network at run time) under haproxy 2.6 and
// `vipstack lb`, side by side in network namespaces, and checks that traffic
// lands where haproxy sends it: the kubeadm guide's API balancer, an
// OpenShift UPI layout with servers named by DNS, a Patroni primary and
// replica pair chosen by tcp-check, and an HTTP frontend routing by Host.
// It has tests only; the code they exercise lives in internal/lb and the
// packages it uses.
package lbfiles
