// Package smtpsink is a minimal SMTP server for tests: it accepts every
// command and records each conversation as the lines the client sent.
package smtpsink

import (
	"bufio"
	"net"
	"strings"
	"sync"
)

// Sink records the conversations held on its listener.
type Sink struct {
	ln    net.Listener
	mu    sync.Mutex
	convs [][]string
	wg    sync.WaitGroup
}

// Serve serves ln until Close.
func Serve(ln net.Listener) *Sink {
	s := &Sink{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	return s
}

// Addr is the listener's address.
func (s *Sink) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// Close stops the listener and waits for open conversations to end.
func (s *Sink) Close() {
	s.ln.Close()
	s.wg.Wait()
}

// Conversations returns the finished conversations (each ended by QUIT or
// by the client closing), lines without their CRLF.
func (s *Sink) Conversations() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.convs))
	copy(out, s.convs)
	return out
}

func (s *Sink) serve(c net.Conn) {
	defer c.Close()
	var lines []string
	recorded := false
	record := func() {
		if !recorded {
			recorded = true
			s.mu.Lock()
			s.convs = append(s.convs, lines)
			s.mu.Unlock()
		}
	}
	defer record()
	r := bufio.NewReader(c)
	reply := func(l string) bool { _, err := c.Write([]byte(l + "\r\n")); return err == nil }
	if !reply("220 sink ESMTP") {
		return
	}
	data := false
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return
		}
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		lines = append(lines, l)
		switch cmd := strings.ToUpper(l); {
		case data && l == ".":
			data = false
			reply("250 queued")
		case data:
		case strings.HasPrefix(cmd, "DATA"):
			data = true
			reply("354 go ahead")
		case strings.HasPrefix(cmd, "QUIT"):
			// Recorded before the reply: a client that has read it finds
			// its conversation in Conversations. A test in a synctest
			// bubble waits in virtual time, which may run on while this
			// goroutine, outside the bubble, has yet to record.
			record()
			reply("221 bye")
			return
		default:
			reply("250 ok")
		}
	}
}
