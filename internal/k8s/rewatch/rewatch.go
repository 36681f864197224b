// Package rewatch keeps informers current across API-server restarts.
//
// client-go's reflector backs off exponentially (0.8 s doubling to 30 s,
// with up to as much again of jitter, reset only after two quiet minutes)
// every time a list or watch fails or a watch ends early. After two or
// three API-server restarts within two minutes an informer may wait
// 10 to 50 s before it watches again, and everything its controller reads
// from the cache is that old: a Service created meanwhile gets no address,
// status writes conflict over and over on an old resourceVersion. The
// backoff cannot be configured through controller-runtime's or
// client-go's informer constructors.
//
// Wrap puts a ListerWatcher in front of the reflector that absorbs these
// failures itself: a list or watch request that fails for a reason that
// passes (the server down, restarting, overloaded, or its authorizer not
// ready yet) is retried after a short, capped delay for up to GiveUp; a
// watch the server ends without an error is opened again from the last
// resourceVersion seen, so the reflector sees one watch that never broke.
// What does not pass (a 410 Gone, a refusal that lasts) reaches the
// reflector as before, which lists again or backs off in its own way.
package rewatch

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/vipstack/vipstack/internal/clock"
)

// Options tune the retries. The zero value gives the defaults.
type Options struct {
	// Min is the delay after the first failure; it doubles up to Max, and
	// each delay is drawn between half of it and all of it (default
	// 100 ms and 1 s).
	Min, Max time.Duration
	// GiveUp is how long a request keeps failing before its error goes to
	// the reflector (default 1 min; 10 s for 401 and 403).
	GiveUp time.Duration
	// Logger tells when a watch is opened again; nil: slog.Default().
	Logger *slog.Logger
	// Name names the watched kind in the log (NewInformer sets it).
	Name string
	// sleep waits d or until ctx ends, and now tells the time (tests);
	// nil: a timer and time.Now.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Min <= 0 {
		o.Min = 100 * time.Millisecond
	}
	if o.Max < o.Min {
		o.Max = max(time.Second, o.Min)
	}
	if o.GiveUp <= 0 {
		o.GiveUp = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.sleep == nil {
		o.sleep = clock.Sleep
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// NewInformer is a constructor for controller-runtime's
// cache.Options.NewInformer: client-go's shared informer over a wrapped
// ListerWatcher.
func NewInformer(o Options) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	return func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, ix cache.Indexers) cache.SharedIndexInformer {
		oo := o
		if oo.Name == "" {
			oo.Name = kindOf(obj)
		}
		w := wrap(lw, oo)
		inf := cache.NewSharedIndexInformer(w, obj, resync, ix)
		w.mu.Lock()
		w.store = inf.GetStore()
		w.mu.Unlock()
		return inf
	}
}

func kindOf(obj runtime.Object) string {
	if obj == nil {
		return "objects"
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// Wrap returns lw with the retries described in the package comment.
func Wrap(lw cache.ListerWatcher, o Options) cache.ListerWatcher { return wrap(lw, o) }

func wrap(lw cache.ListerWatcher, o Options) *listerWatcher {
	return &listerWatcher{
		inner:       cache.ToListerWatcherWithContext(lw),
		noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		o:           o.withDefaults(),
	}
}

type listerWatcher struct {
	inner       cache.ListerWatcherWithContext
	noWatchList bool
	o           Options

	mu    sync.Mutex
	store cache.Store // the informer's, once NewInformer has made it
}

func (l *listerWatcher) known() cache.Store {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.store
}

// IsWatchListSemanticsUnSupported passes on what the wrapped
// ListerWatcher says, so that the reflector streams its lists as it would.
func (l *listerWatcher) IsWatchListSemanticsUnSupported() bool { return l.noWatchList }

func (l *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	var out runtime.Object
	err := l.retry(ctx, func() error {
		var err error
		out, err = l.inner.ListWithContext(ctx, opts)
		return err
	})
	return out, err
}

func (l *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var w watch.Interface
	err := l.retry(ctx, func() error {
		var err error
		w, err = l.inner.WatchWithContext(ctx, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return newResuming(ctx, l, opts, w), nil
}

// retry calls f until it succeeds, fails for a reason that does not pass,
// GiveUp has gone by or ctx ends; it returns f's last error.
func (l *listerWatcher) retry(ctx context.Context, f func() error) error {
	start := l.o.now()
	delay := l.o.Min
	for {
		err := f()
		if err == nil || !Transient(err) {
			return err
		}
		if waited := l.o.now().Sub(start); waited >= l.o.GiveUp || (refusal(err) && waited >= authGrace) {
			return err
		}
		d := delay/2 + rand.N(delay/2+1)
		if l.o.sleep(ctx, d) != nil {
			return err
		}
		delay = min(2*delay, l.o.Max)
	}
}

// authGrace bounds the retries of a 401 or 403: a freshly started API
// server gives them for a few seconds, a missing RBAC rule for ever, and
// the reflector's log should tell the latter soon.
const authGrace = 10 * time.Second

func refusal(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) }

// Transient reports whether a failed request is worth repeating soon: the
// API server cannot be reached or is restarting, overloaded, timing out,
// or refuses while its authenticator or authorizer is not ready yet (it
// answers 401 and 403 for a few seconds after it starts).
func Transient(err error) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsInternalError(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		utilnet.IsTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// resuming is a watch that opens its inner watch again, from the last
// resourceVersion it passed on, when the server ends it without an error.
type resuming struct {
	l      *listerWatcher
	ctx    context.Context
	cancel context.CancelFunc
	opts   metav1.ListOptions
	result chan watch.Event

	mu    sync.Mutex
	inner watch.Interface
}

func newResuming(ctx context.Context, l *listerWatcher, opts metav1.ListOptions, w watch.Interface) *resuming {
	ctx, cancel := context.WithCancel(ctx)
	r := &resuming{l: l, ctx: ctx, cancel: cancel, opts: opts, result: make(chan watch.Event), inner: w}
	go r.run()
	return r
}

func (r *resuming) ResultChan() <-chan watch.Event { return r.result }

func (r *resuming) Stop() {
	r.cancel()
	r.mu.Lock()
	w := r.inner
	r.mu.Unlock()
	w.Stop()
}

// end tells how a pass over one inner watch ended.
type end int

const (
	closed  end = iota // the server closed it: open it again
	over               // Stop, an error passed on, or not resumable
	expired            // a resumed watch's version is gone: list again
)

func (r *resuming) run() {
	defer close(r.result)
	rv := r.opts.ResourceVersion
	// A watch that starts with synthetic ADDED events (no resourceVersion,
	// "0", or a streamed list) can be resumed only once they are over.
	resumable := rv != "" && rv != "0" && !sendsInitialEvents(r.opts)
	w, resumed := r.current(), false
	for {
		var how end
		rv, resumable, how = r.pass(w, rv, resumable, resumed)
		w.Stop()
		if how == over || !resumable || r.ctx.Err() != nil {
			return
		}
		broke := time.Now()
		var err error
		if how == expired {
			if rv, err = r.relist(); err != nil {
				r.fail(err)
				return
			}
		}
		if w, err = r.reopen(rv); err != nil {
			r.fail(err)
			return
		}
		resumed = true
		r.mu.Lock()
		r.inner = w
		r.mu.Unlock()
		if r.ctx.Err() != nil { // Stop ran between the open and the swap
			w.Stop()
			return
		}
		r.l.o.Logger.Info("API watch opened again after the server ended it", "kind", r.l.o.Name,
			"resourceVersion", rv, "listed", how == expired, "after", time.Since(broke).Round(time.Millisecond))
	}
}

func (r *resuming) current() watch.Interface {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inner
}

// reopen opens the watch from rv, with the retries; a 410 Gone there
// comes back as an error event of the new watch's or as the error.
func (r *resuming) reopen(rv string) (watch.Interface, error) {
	opts := r.opts
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.SendInitialEvents = rv, "", nil
	var w watch.Interface
	err := r.l.retry(r.ctx, func() error {
		var err error
		w, err = r.l.inner.WatchWithContext(r.ctx, opts)
		return err
	})
	if err != nil && gone(err) && r.l.known() != nil {
		if rv, err = r.relist(); err == nil {
			return r.reopen(rv)
		}
	}
	return w, err
}

// fail passes err on as the watch's last event.
func (r *resuming) fail(err error) {
	if r.ctx.Err() == nil {
		r.send(errorEvent(err))
	}
}

// pass forwards w's events until w ends; it returns the last
// resourceVersion seen, whether the watch may be resumed from it, and how
// it ended. A 410 Gone on a resumed watch is kept back when the
// informer's store is known: relist brings the store up to date instead.
func (r *resuming) pass(w watch.Interface, rv string, resumable, resumed bool) (string, bool, end) {
	for {
		select {
		case <-r.ctx.Done():
			return rv, resumable, over
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, resumable, closed
			}
			if ev.Type == watch.Error {
				if resumed && r.l.known() != nil && gone(apierrors.FromObject(ev.Object)) {
					return rv, resumable, expired
				}
				r.send(ev)
				return rv, resumable, over
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				if v := m.GetResourceVersion(); v != "" && (resumable || ev.Type != watch.Added) {
					rv = v
				}
				if ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					resumable = rv != "" && rv != "0"
				}
			}
			if !r.send(ev) {
				return rv, resumable, over
			}
		}
	}
}

func gone(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// relist lists the objects afresh and passes on what changed against the
// informer's store as ADDED, MODIFIED and DELETED events, as the
// reflector's own list would have; it returns the list's version.
func (r *resuming) relist() (string, error) {
	known := r.l.known()
	var list runtime.Object
	err := r.l.retry(r.ctx, func() error {
		var err error
		list, err = r.l.inner.ListWithContext(r.ctx, metav1.ListOptions{LabelSelector: r.opts.LabelSelector, FieldSelector: r.opts.FieldSelector})
		return err
	})
	if err != nil {
		return "", err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	listed := make(map[string]bool, len(items))
	for _, it := range items {
		key, err := cache.MetaNamespaceKeyFunc(it)
		if err != nil {
			return "", err
		}
		listed[key] = true
		old, ok, _ := known.GetByKey(key)
		switch {
		case !ok:
			if !r.send(watch.Event{Type: watch.Added, Object: it}) {
				return "", r.ctx.Err()
			}
		case versionOf(old) != versionOf(it):
			if !r.send(watch.Event{Type: watch.Modified, Object: it}) {
				return "", r.ctx.Err()
			}
		}
	}
	for _, key := range known.ListKeys() {
		if listed[key] {
			continue
		}
		if old, ok, _ := known.GetByKey(key); ok {
			if o, isObj := old.(runtime.Object); isObj && !r.send(watch.Event{Type: watch.Deleted, Object: o}) {
				return "", r.ctx.Err()
			}
		}
	}
	return lm.GetResourceVersion(), nil
}

func versionOf(o any) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func (r *resuming) send(ev watch.Event) bool {
	select {
	case r.result <- ev:
		return true
	case <-r.ctx.Done():
		return false
	}
}

func sendsInitialEvents(o metav1.ListOptions) bool {
	return o.SendInitialEvents != nil && *o.SendInitialEvents
}

// errorEvent carries err to the reflector as a watch error, keeping the
// API status (a 410 Gone makes it list again at once).
func errorEvent(err error) watch.Event {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return watch.Event{Type: watch.Error, Object: &s}
	}
	s := apierrors.NewInternalError(err).ErrStatus
	return watch.Event{Type: watch.Error, Object: &s}
}
