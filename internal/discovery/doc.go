// Package discovery tells the rest of vipstack which cluster nodes exist,
// their roles and their addresses. Sources (a static list, mDNS as in RFC
// 6762/6763, the Kubernetes Node list) all feed the same small Registry,
// which consumers such as the DNS plugin read on every query.
package discovery
