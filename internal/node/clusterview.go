package node

import "github.com/vipstack/vipstack/internal/cluster"

// Cluster is the cluster file in force (the last one accepted).
func (a *Agent) Cluster() *cluster.Cluster {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cluster
}
