package rewatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fakeLW answers List and Watch from scripted results, in order, and
// records the options of each call.
type fakeLW struct {
	mu        sync.Mutex
	watches   []func() (watch.Interface, error)
	lists     []func() (runtime.Object, error)
	watchOpts []metav1.ListOptions
	listOpts  []metav1.ListOptions
}

func (f *fakeLW) List(o metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listOpts = append(f.listOpts, o)
	if len(f.lists) == 0 {
		return nil, errors.New("fakeLW: no more lists scripted")
	}
	next := f.lists[0]
	f.lists = f.lists[1:]
	return next()
}

func (f *fakeLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchOpts = append(f.watchOpts, o)
	if len(f.watches) == 0 {
		return nil, errors.New("fakeLW: no more watches scripted")
	}
	next := f.watches[0]
	f.watches = f.watches[1:]
	return next()
}

func (f *fakeLW) opts() []metav1.ListOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metav1.ListOptions(nil), f.watchOpts...)
}

func gives(w watch.Interface) func() (watch.Interface, error) {
	return func() (watch.Interface, error) { return w, nil }
}

func fails(err error) func() (watch.Interface, error) {
	return func() (watch.Interface, error) { return nil, err }
}

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// fakeTime is a clock the retries' sleeps advance.
type fakeTime struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func (f *fakeTime) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }

func (f *fakeTime) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
	f.sleeps = append(f.sleeps, d)
	return nil
}

func testOptions(ft *fakeTime) Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Name: "ConfigMap", sleep: ft.sleep, now: ft.now}
}

// next reads one event, failing the test if none comes.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended, want another event")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
	}
	return watch.Event{}
}

func wantEnd(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got event %s %v, want the watch ended", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end in 10 s")
	}
}

type seen struct {
	Type watch.EventType
	Name string
	RV   string
}

func seenOf(ev watch.Event) seen {
	c, ok := ev.Object.(*corev1.ConfigMap)
	if !ok {
		return seen{Type: ev.Type, Name: fmt.Sprintf("%T", ev.Object)}
	}
	return seen{ev.Type, c.Name, c.ResourceVersion}
}

// TestResumesAfterClose: a watch the server closes is opened again from
// the last resourceVersion passed on, with the caller's other options;
// the caller sees one watch.
func TestResumesAfterClose(t *testing.T) {
	w1, w2 := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	lw := &fakeLW{watches: []func() (watch.Interface, error){gives(w1), gives(w2)}}
	ft := &fakeTime{}
	w, err := wrap(lw, testOptions(ft)).WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "10", LabelSelector: "a=b", TimeoutSeconds: ptr.To[int64](300), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	w1.Add(cm("a", "11"))
	w1.Modify(cm("a", "12"))
	w1.Stop() // the server ends the watch
	w2.Modify(cm("a", "13"))
	var got []seen
	for range 3 {
		got = append(got, seenOf(next(t, w)))
	}
	want := []seen{{watch.Added, "a", "11"}, {watch.Modified, "a", "12"}, {watch.Modified, "a", "13"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	opts := lw.opts()
	if len(opts) != 2 {
		t.Fatalf("%d watches opened, want 2", len(opts))
	}
	wantOpts := metav1.ListOptions{ResourceVersion: "12", LabelSelector: "a=b", TimeoutSeconds: ptr.To[int64](300), AllowWatchBookmarks: true}
	if diff := cmp.Diff(wantOpts, opts[1]); diff != "" {
		t.Errorf("options of the resumed watch (-want +got):\n%s", diff)
	}
	if len(ft.sleeps) != 0 {
		t.Errorf("slept %v before resuming, want no wait when the server answers", ft.sleeps)
	}
}

// TestRetries: failures that pass are retried after delays that double
// up to Max (each between half and all of its step); others, and those
// that last beyond GiveUp (10 s for 401 and 403), go to the caller.
func TestRetries(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	unavailable := apierrors.NewServiceUnavailable("restarting")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: not ready"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	ok := watch.NewFake()
	repeat := func(n int, f func() (watch.Interface, error)) []func() (watch.Interface, error) {
		out := make([]func() (watch.Interface, error), n)
		for i := range out {
			out[i] = f
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		script  []func() (watch.Interface, error)
		calls   int
		wantErr error
		maxWait time.Duration
	}{
		{"refused then unavailable then open", []func() (watch.Interface, error){fails(refused), fails(unavailable), gives(ok)}, 3, nil, time.Second},
		{"not found at once", []func() (watch.Interface, error){fails(notFound), gives(ok)}, 1, notFound, 0},
		{"refused beyond GiveUp", repeat(200, fails(refused)), 0, refused, time.Minute + time.Second},
		{"forbidden beyond 10 s", repeat(200, fails(forbidden)), 0, forbidden, 11 * time.Second},
		{"forbidden then open", []func() (watch.Interface, error){fails(forbidden), fails(forbidden), gives(ok)}, 3, nil, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := &fakeLW{watches: tc.script}
			ft := &fakeTime{}
			o := testOptions(ft)
			o.Min, o.Max, o.GiveUp = 100*time.Millisecond, time.Second, time.Minute
			w, err := wrap(lw, o).WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "5"})
			if w != nil {
				w.Stop()
			}
			if !errors.Is(err, tc.wantErr) && (tc.wantErr == nil || err == nil || err.Error() != tc.wantErr.Error()) {
				t.Errorf("Watch: %v, want %v", err, tc.wantErr)
			}
			if n := len(lw.opts()); tc.calls > 0 && n != tc.calls {
				t.Errorf("%d requests, want %d", n, tc.calls)
			}
			var total time.Duration
			step := o.Min
			for i, d := range ft.sleeps {
				if d < step/2 || d > step {
					t.Errorf("wait %d: %v, want between %v and %v", i, d, step/2, step)
				}
				total += d
				step = min(2*step, o.Max)
			}
			if total > tc.maxWait {
				t.Errorf("waited %v in all, want at most %v", total, tc.maxWait)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{syscall.ECONNREFUSED, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{io.ErrUnexpectedEOF, true},
		{apierrors.NewTooManyRequests("storage is (re)initializing", 1), true},
		{apierrors.NewServiceUnavailable("x"), true},
		{apierrors.NewInternalError(errors.New("x")), true},
		{apierrors.NewTimeoutError("x", 1), true},
		{apierrors.NewForbidden(gr, "", errors.New("x")), true},
		{apierrors.NewUnauthorized("x"), true},
		{apierrors.NewNotFound(gr, "x"), false},
		{apierrors.NewResourceExpired("too old resource version"), false},
		{apierrors.NewBadRequest("x"), false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestErrorEventEnds: an error from the server is passed on and ends the
// watch; nothing is opened again.
func TestErrorEventEnds(t *testing.T) {
	w1 := watch.NewFakeWithChanSize(2, false)
	lw := &fakeLW{watches: []func() (watch.Interface, error){gives(w1), gives(watch.NewFake())}}
	w, err := wrap(lw, testOptions(&fakeTime{})).WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	st := apierrors.NewResourceExpired("too old resource version: 10 (20)").ErrStatus
	w1.Error(&st)
	ev := next(t, w)
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Errorf("got %s %v, want the 410 passed on", ev.Type, ev.Object)
	}
	wantEnd(t, w)
	if n := len(lw.opts()); n != 1 {
		t.Errorf("%d watches opened, want 1", n)
	}
}

// TestStreamedList: a watch that streams a list resumes only after the
// bookmark that ends the list, from its version, as a plain watch.
func TestStreamedList(t *testing.T) {
	for _, bookmark := range []bool{true, false} {
		t.Run(fmt.Sprintf("bookmark=%v", bookmark), func(t *testing.T) {
			w1, w2 := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(1, false)
			lw := &fakeLW{watches: []func() (watch.Interface, error){gives(w1), gives(w2)}}
			opts := metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
			w, err := wrap(lw, testOptions(&fakeTime{})).WatchWithContext(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			w1.Add(cm("b", "7"))
			w1.Add(cm("a", "5"))
			if bookmark {
				end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
				w1.Action(watch.Bookmark, end)
			}
			w1.Stop()
			n := 2
			if bookmark {
				n = 3
			}
			for range n {
				next(t, w)
			}
			if !bookmark {
				wantEnd(t, w)
				if got := len(lw.opts()); got != 1 {
					t.Errorf("%d watches opened, want 1: a list cut short is the reflector's to redo", got)
				}
				return
			}
			w2.Add(cm("c", "10"))
			if got := seenOf(next(t, w)); got != (seen{watch.Added, "c", "10"}) {
				t.Errorf("after resuming got %+v", got)
			}
			o := lw.opts()[1]
			want := metav1.ListOptions{ResourceVersion: "9", AllowWatchBookmarks: true}
			if diff := cmp.Diff(want, o); diff != "" {
				t.Errorf("options of the resumed watch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRelistAfterGone: when a resumed watch's version is gone (the API
// server restarted without it), the wrapper of an informer lists again
// and passes on the difference from the informer's store, then watches
// from the list's version; the reflector never sees the 410.
func TestRelistAfterGone(t *testing.T) {
	for _, how := range []string{"event", "error"} {
		t.Run(how, func(t *testing.T) {
			w1, w2, w3 := watch.NewFakeWithChanSize(1, false), watch.NewFakeWithChanSize(1, false), watch.NewFakeWithChanSize(1, false)
			st := apierrors.NewResourceExpired("too old resource version: 10 (20)")
			second := gives(w2)
			if how == "error" {
				second = fails(st)
			} else {
				w2.Error(&st.ErrStatus)
			}
			lw := &fakeLW{
				watches: []func() (watch.Interface, error){gives(w1), second, gives(w3)},
				lists: []func() (runtime.Object, error){func() (runtime.Object, error) {
					return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "30"},
						Items: []corev1.ConfigMap{*cm("a", "1"), *cm("b", "25"), *cm("d", "26")}}, nil
				}},
			}
			l := wrap(lw, testOptions(&fakeTime{}))
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			for _, o := range []*corev1.ConfigMap{cm("a", "1"), cm("b", "2"), cm("c", "3")} {
				if err := store.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			l.store = store
			w, err := l.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "10", FieldSelector: "metadata.name!=z"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			w1.Stop()
			var got []seen
			for range 3 {
				got = append(got, seenOf(next(t, w)))
			}
			want := []seen{{watch.Modified, "b", "25"}, {watch.Added, "d", "26"}, {watch.Deleted, "c", "3"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events after the relist (-want +got):\n%s", diff)
			}
			w3.Modify(cm("d", "31"))
			if got := seenOf(next(t, w)); got != (seen{watch.Modified, "d", "31"}) {
				t.Errorf("after the relist got %+v", got)
			}
			opts := lw.opts()
			if len(opts) != 3 || opts[2].ResourceVersion != "30" {
				t.Errorf("watches opened: %+v, want the third from the list's version 30", opts)
			}
			lw.mu.Lock()
			defer lw.mu.Unlock()
			if len(lw.listOpts) != 1 || lw.listOpts[0].FieldSelector != "metadata.name!=z" {
				t.Errorf("lists: %+v, want one with the watch's selector", lw.listOpts)
			}
		})
	}
}

// TestStop: Stop ends the watch and the inner one, also while it waits to
// be opened again.
func TestStop(t *testing.T) {
	w1 := watch.NewFake()
	lw := &fakeLW{watches: []func() (watch.Interface, error){gives(w1)}}
	w, err := wrap(lw, testOptions(&fakeTime{})).WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	wantEnd(t, w)
	if !w1.IsStopped() {
		t.Error("the inner watch is not stopped")
	}
}

// TestKindOf: the kind that names the log lines, from a typed object or
// from the TypeMeta of a metadata-only one.
func TestKindOf(t *testing.T) {
	if got := kindOf(&corev1.Service{}); got != "Service" {
		t.Errorf("kindOf(Service) = %q", got)
	}
	if got := kindOf(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Secret"}}); got != "Secret" {
		t.Errorf("kindOf(PartialObjectMetadata of Secret) = %q", got)
	}
}
