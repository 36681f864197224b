package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/node"
)

// The agents' status Leases: one per node, named LeasePrefix+node in the
// agents' namespace, labelled LeaseLabel, renewed every PublishEvery (and
// within a second of a change), with the agent's state as JSON
// (Published) in the annotation StatusAnnotation. A Lease not renewed for
// its leaseDurationSeconds is an agent gone silent. `vipstack status
// --cluster --kubeconfig` reads them.
const (
	LeasePrefix      = "vipstack-agent-"
	LeaseLabel       = "vipstack.io/agent-status"
	StatusAnnotation = "vipstack.io/status"
	PublishEvery     = 10 * time.Second
	// maxPublished bounds the annotation (the API server takes 256 KiB
	// of annotations per object).
	maxPublished = 200 << 10
)

// Published is an agent's state as its Lease carries it.
type Published struct {
	Node      string                  `json:"node"`
	Warnings  []string                `json:"warnings,omitempty"`
	Instances []engine.InstanceStatus `json:"instances"`
	// BGP is the speaker's peers and routes, without its counters.
	BGP *node.BGPStatus `json:"bgp,omitempty"`
}

// publisher keeps the node's status Lease up to date.
type publisher struct {
	a         *Agent
	c         client.Client
	reader    client.Reader // uncached: the agent watches no Leases
	namespace string
}

// Start publishes until ctx is done: a changed state within a second, an
// unchanged one every PublishEvery.
func (p *publisher) Start(ctx context.Context) error {
	var last []byte
	var at time.Time
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		body := p.published()
		if !slices.Equal(body, last) || time.Since(at) >= PublishEvery {
			if err := p.write(ctx, body); err != nil {
				p.a.log.Warn("publishing the agent's status Lease failed", "namespace", p.namespace, "err", err)
			} else {
				last, at = body, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// published is the agent's state, without what changes with every
// advert (counters, times seen), as JSON of at most maxPublished bytes.
func (p *publisher) published() []byte {
	s := p.a.Status()
	out := Published{Node: s.Node, Warnings: s.Warnings, Instances: make([]engine.InstanceStatus, 0, len(s.Instances))}
	for _, in := range s.Instances {
		in.AdvertsSent, in.AdvertsRecv = 0, 0
		for i := range in.Conflicts {
			in.Conflicts[i].LastSeen = time.Time{}
		}
		out.Instances = append(out.Instances, in)
	}
	if b := s.BGP; b != nil {
		b.Announces, b.Withdrawals = 0, 0
		for i := range b.Peers {
			b.Peers[i].UpdatesSent = 0
		}
		out.BGP = b
	}
	body, _ := json.Marshal(out)
	for len(body) > maxPublished && len(out.Instances) > 0 {
		out.Instances = out.Instances[:len(out.Instances)/2]
		out.Warnings = append(slices.Clip(s.Warnings), fmt.Sprintf("status truncated to %d of %d instances (the Lease's annotation is bounded)", len(out.Instances), len(s.Instances)))
		body, _ = json.Marshal(out)
	}
	return body
}

func (p *publisher) write(ctx context.Context, body []byte) error {
	name := LeasePrefix + p.a.opts.Node
	now := metav1.NewMicroTime(time.Now())
	secs := int32(3 * PublishEvery / time.Second)
	var l coordinationv1.Lease
	err := p.reader.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: name,
			Labels: map[string]string{LeaseLabel: "true"}}}
	} else if err != nil {
		return err
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[StatusAnnotation] = string(body)
	node := p.a.opts.Node
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &node, &secs, &now
	if l.ResourceVersion == "" {
		return p.c.Create(ctx, &l)
	}
	return p.c.Update(ctx, &l)
}

// NeedLeaderElection: every node's agent publishes its own Lease.
func (p *publisher) NeedLeaderElection() bool { return false }
