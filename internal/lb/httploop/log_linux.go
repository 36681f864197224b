package httploop

import (
	"net/http"
	"strconv"
	"time"

	"github.com/vipstack/vipstack/internal/lb/httpproxy"
)

// errorAnswer is haproxy's own answer with status (its built-in error
// page), which ends the connection.
func errorAnswer(status int, method string) string {
	body := httpproxy.ErrorBody(status)
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\ncontent-length: " + strconv.Itoa(len(body)) +
		"\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n"
	if method == http.MethodHead {
		return head
	}
	return head + body
}

// since is the time from a to b, or -1 when a step was not reached.
func since(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return -1
	}
	return max(b.Sub(a), 0)
}

// logTx writes the transaction's log line, when the frontend logs.
func (c *conn) logTx() {
	tx := c.tx
	if tx == nil || tx.cfg == nil || tx.cfg.cfg.Log == nil {
		return
	}
	cfg := tx.cfg
	now := c.lp.now
	if !c.local.IsValid() {
		c.local = localAddr(c.fd)
	}
	e := httpproxy.Entry{Client: c.client, Frontend: c.local, Accept: tx.start, FrontendName: cfg.cfg.Frontend.Name,
		Backend: cfg.cfg.Frontend.Name, Server: "<NOSRV>", Method: tx.head.Method, URI: tx.head.URI, Version: tx.version,
		Status: tx.status, Bytes: tx.bytes, TR: since(tx.start, tx.headAt), Tw: -1, Tc: -1, Tr: -1, Ta: since(tx.start, now),
		Term: tx.term, Retries: tx.retries, Nth: c.nth}
	if tx.head.Method == "" {
		e.BadRequest, e.Request = true, "<BADREQ>"
	} else {
		e.Request = e.Method + " " + e.URI + " " + e.Version
	}
	if tx.be != nil && tx.head.Method != "" {
		e.Backend = tx.be.name
	}
	if tx.be != nil && tx.server >= 0 && tx.server < len(tx.be.servers) {
		s := tx.be.servers[tx.server]
		e.Server, e.ServerAddr = s.Name, s.Addr
		e.Tw = 0
		e.Tc = since(tx.connStart, tx.connected)
		e.Tr = since(tx.sent, tx.firstByte)
		if !tx.firstByte.IsZero() && tx.firstByte.Before(tx.sent) {
			e.Tr = 0
		}
	}
	cfg.cfg.Log(e)
}

// logEmpty writes haproxy's line for a client that connected and
// closed without a byte (CR, "<BADREQ>", 400).
func (c *conn) logEmpty(cfg *compiled) {
	if cfg.cfg.Log == nil {
		return
	}
	if !c.local.IsValid() {
		c.local = localAddr(c.fd)
	}
	name := cfg.cfg.Frontend.Name
	cfg.cfg.Log(httpproxy.Entry{Client: c.client, Frontend: c.local, Accept: c.accepted, FrontendName: name,
		Backend: name, Server: "<NOSRV>", Request: "<BADREQ>", Status: 400, TR: -1, Tw: -1, Tc: -1, Tr: -1,
		Ta: since(c.accepted, c.lp.now), Term: "CR", BadRequest: true})
}
