// Package filewatch tells when a configuration file changes, by its
// modification time and size, checked on an injected clock: what
// `vipstack lb` and `vipstack node` reload on, besides SIGHUP.
package filewatch
