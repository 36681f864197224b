package engine

import "sync"

// announcers shares one Announcer per interface among the instances on it.
// Each instance used to open its own, an AF_PACKET socket each: 1,000 of
// them for 1,000 instances on four interfaces (bench/scale,
// docs/design/memory.md). A shared one is safe for concurrent use (the
// instances' pacers send from their own timers).
type announcers struct {
	mu sync.Mutex
	m  map[annKey]*sharedAnnouncer
}

// annKey names an interface: its name and index, and for the real one its
// hardware address, so that an instance built after any of them changed
// gets an announcer of its own, as it did.
type annKey struct {
	name  string
	index int
	mac   string
}

type sharedAnnouncer struct {
	Announcer
	refs int
}

// annRef is one instance's use of a shared announcer: Close ends that use
// (once), and closes the announcer with its last use.
type annRef struct {
	*sharedAnnouncer
	pool *announcers
	key  annKey
	once sync.Once
}

func (r *annRef) Close() error {
	var err error
	r.once.Do(func() { err = r.pool.release(r.key) })
	return err
}

// get returns a use of the announcer of k, opened with open if none is in
// use.
func (p *announcers) get(k annKey, open func() (Announcer, error)) (Announcer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.m[k]
	if s == nil {
		a, err := open()
		if err != nil {
			return nil, err
		}
		if p.m == nil {
			p.m = map[annKey]*sharedAnnouncer{}
		}
		s = &sharedAnnouncer{Announcer: a}
		p.m[k] = s
	}
	s.refs++
	return &annRef{sharedAnnouncer: s, pool: p, key: k}, nil
}

func (p *announcers) release(k annKey) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.m[k]
	if s == nil {
		return nil
	}
	if s.refs--; s.refs > 0 {
		return nil
	}
	delete(p.m, k)
	return s.Announcer.Close()
}
