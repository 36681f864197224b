package haproxycfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Error is one rejection of a haproxy.cfg.
type Error struct {
	File    string
	Line    int    // 0 for an error about the whole file
	Keyword string // the keyword concerned ("bind", "timeout"); "" when none applies
	Msg     string
}

// Error returns "file:line: msg", or "file: msg" when Line is 0.
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// errList collects rejections, keeping the first lbconfig.MaxErrors and
// counting the rest, so a hostile file cannot make it grow without bound.
type errList struct {
	errs    []*Error
	dropped int
}

func (l *errList) add(file string, line int, kw, format string, a ...any) {
	l.push(&Error{File: file, Line: line, Keyword: kw, Msg: fmt.Sprintf(format, a...)})
}

func (l *errList) push(e *Error) {
	e.Msg = lbconfig.Printable(e.Msg)
	if len(l.errs) == lbconfig.MaxErrors {
		l.dropped++
		return
	}
	l.errs = append(l.errs, e)
}

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	out := make([]error, 0, len(l.errs)+1)
	for _, e := range l.errs {
		out = append(out, e)
	}
	if l.dropped > 0 {
		out = append(out, lbconfig.MoreErrors(l.dropped))
	}
	return errors.Join(out...)
}

// addValidation turns lbconfig.Validate's errors into *Error, with the
// position Validate found in Config.Source ("file:line"), or the file
// alone when it had none.
func (l *errList) addValidation(file string, err error) {
	var list []error
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		list = u.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var more lbconfig.MoreErrors
		if errors.As(e, &more) {
			l.dropped += int(more)
			continue
		}
		var fe *lbconfig.FieldError
		if !errors.As(e, &fe) {
			l.push(&Error{File: file, Msg: e.Error()})
			continue
		}
		out := &Error{File: file, Keyword: fe.Keyword, Msg: fe.Msg}
		if fe.Field != "" {
			out.Msg = fe.Field + ": " + fe.Msg
		}
		if i := strings.LastIndexByte(fe.Pos, ':'); i >= 0 {
			if n, err := strconv.Atoi(fe.Pos[i+1:]); err == nil {
				out.File, out.Line = fe.Pos[:i], n
			}
		}
		l.push(out)
	}
}
