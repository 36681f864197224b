package dns

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"k8s.io/client-go/rest"
)

// inClusterLine is a kubernetes directive that names neither an endpoint
// nor a kubeconfig, so that the plugin takes its API server from the pod
// it runs in (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and the
// service account token), as in every Kubernetes deployment of CoreDNS.
type inClusterLine struct {
	file string
	line int
}

// inClusterLines returns cf's kubernetes directives that need a pod
// (inClusterLine), in the order of the file.
func inClusterLines(cf Corefile) []inClusterLine {
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return nil
	}
	var out []inClusterLine
	for _, b := range blocks {
		toks := b.Tokens["kubernetes"]
		if len(toks) == 0 {
			continue
		}
		d := caddyfile.NewDispenserTokens(cf.name(), toks)
		for d.Next() {
			l := inClusterLine{file: d.File(), line: d.Line()}
			if l.file == "" {
				l.file = cf.name()
			}
			d.RemainingArgs()
			own := false
			for d.NextBlock() {
				if v := d.Val(); v == "endpoint" || v == "kubeconfig" {
					own = true
				}
				d.RemainingArgs()
			}
			if !own {
				out = append(out, l)
			}
		}
	}
	return out
}

// notInPod reports why this process cannot take a kubernetes block's API
// server from its pod, or "" when it can.
func notInPod() string {
	if _, err := rest.InClusterConfig(); err != nil {
		return err.Error()
	}
	return ""
}

// checkEndpoint is the API server CheckPortable gives a kubernetes block
// that would take its own from a pod. Setting up the plugin builds a client
// for it without connecting; nothing ever dials it.
const checkEndpoint = "https://127.0.0.1:6443"

// withEndpoint returns cf with " endpoint checkEndpoint" added to each of
// lines (kubernetes directives of cf's own file), on the directive's line,
// so that every later line keeps its number in errors. It returns false if
// a line cannot be amended that way.
func withEndpoint(cf Corefile, lines []inClusterLine) (Corefile, bool) {
	src := strings.Split(string(cf.Contents), "\n")
	for _, l := range lines {
		if l.file != cf.name() || l.line < 1 || l.line > len(src) {
			return cf, false
		}
		text := src[l.line-1]
		code, comment := text, ""
		if i := strings.IndexByte(text, '#'); i >= 0 {
			code, comment = text[:i], text[i:]
		}
		trimmed := strings.TrimRight(code, " \t")
		if !strings.HasPrefix(strings.TrimSpace(trimmed), "kubernetes") || strings.ContainsAny(trimmed, "\"`}") {
			return cf, false
		}
		if strings.HasSuffix(trimmed, "{") {
			trimmed += " endpoint " + checkEndpoint
		} else if !strings.Contains(trimmed, "{") {
			trimmed += " { endpoint " + checkEndpoint + " }"
		} else {
			return cf, false
		}
		src[l.line-1] = trimmed + " " + comment
	}
	return Corefile{Path: cf.Path, Contents: []byte(strings.Join(src, "\n"))}, true
}

// inClusterHint adds, to an error from starting cf outside a pod, which
// kubernetes lines need one and what would run them here.
func inClusterHint(cf Corefile, err error) error {
	lines := inClusterLines(cf)
	if len(lines) == 0 || !strings.Contains(err.Error(), "in-cluster configuration") {
		return err
	}
	l := lines[0]
	return fmt.Errorf("%w; %s:%d: kubernetes names no endpoint or kubeconfig, so it takes the API server from the pod it runs in, and this process is not in one: run it in a pod, or add \"endpoint https://HOST:6443\" or \"kubeconfig FILE [CONTEXT]\" to the block", err, l.file, l.line)
}
