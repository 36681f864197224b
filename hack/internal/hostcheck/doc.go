// Package hostcheck re-checks configuration corpus files that the upstream
// checkers and vipstack refuse here only because this host lacks what the
// files name (a host name that does not resolve, a certificate or error
// file that does not exist), with those provided: each check runs in its
// own mount and network namespace (unshare -m -n), chrooted into an overlay
// of / whose /etc/hosts maps every host name the file names to an address
// of 198.18.0.0/15, and which holds a self-signed certificate, a crt-list,
// an error file or an empty file at each missing path the file names. The
// host's own /etc/hosts and file tree are never written.
//
// For haproxy.cfg files it runs `haproxy -c -f FILE` and `vipstack lb -f
// FILE --check`, as ../shared/corpus/run.sh does. For Corefiles it is the
// upstream checker the corpus lacks: it starts stock CoreDNS (the release
// build bench/node uses) on the file, which accepts it when it prints its
// version banner after starting every server, and rejects it when it exits
// first; and it runs `vipstack dns -conf FILE -check`.
//
// hack/corpushost prints its per-file results; hack/corpusdoc counts them.
package hostcheck
