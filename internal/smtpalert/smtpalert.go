package smtpalert

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Message is one alert.
type Message struct {
	HeloName string // the HELO argument (keepalived: smtp_helo_name, else the host name)
	From     string
	To       []string
	Subject  string
	Body     string
	Date     time.Time
}

// Bytes renders the message as sent after DATA, CRLF line ends and dot
// stuffing included, without the final ".".
func (m Message) Bytes() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Date: %s\r\n", m.Date.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "From: %s\r\n", m.From)
	fmt.Fprintf(&b, "Subject: %s\r\n", oneLine(m.Subject))
	b.WriteString("X-Mailer: vipstack\r\n")
	fmt.Fprintf(&b, "To: %s\r\n\r\n", strings.Join(m.To, ", "))
	for _, l := range strings.Split(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(l, ".") {
			l = "." + l
		}
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// Send dials server ("host:port") and delivers m. timeout bounds the whole
// exchange, connection included (keepalived's smtp_connect_timeout).
func Send(ctx context.Context, server string, timeout time.Duration, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return fmt.Errorf("smtp alert to %s: %w", server, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := Converse(c, m); err != nil {
		return fmt.Errorf("smtp alert to %s: %w", server, err)
	}
	return nil
}

// Converse runs the SMTP conversation for m on an open connection.
func Converse(c net.Conn, m Message) error {
	if len(m.To) == 0 {
		return errors.New("no recipient")
	}
	r := bufio.NewReader(c)
	if err := expect(r, "greeting", 220); err != nil {
		return err
	}
	step := func(what, cmd string, code int) error {
		if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return expect(r, what, code)
	}
	if err := step("HELO", "HELO "+oneLine(m.HeloName), 250); err != nil {
		return err
	}
	if err := step("MAIL FROM", "MAIL FROM:<"+oneLine(m.From)+">", 250); err != nil {
		return err
	}
	for _, to := range m.To {
		if err := step("RCPT TO "+to, "RCPT TO:<"+oneLine(to)+">", 250); err != nil {
			return err
		}
	}
	if err := step("DATA", "DATA", 354); err != nil {
		return err
	}
	if _, err := c.Write(append(m.Bytes(), ".\r\n"...)); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	if err := expect(r, "message", 250); err != nil {
		return err
	}
	return step("QUIT", "QUIT", 221)
}

// expect reads one (possibly multi-line) reply and checks its code.
func expect(r *bufio.Reader, what string, code int) error {
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s: reading the reply: %w", what, err)
		}
		l = strings.TrimRight(l, "\r\n")
		var got int
		if len(l) < 3 {
			return fmt.Errorf("%s: malformed reply %q", what, l)
		}
		if _, err := fmt.Sscanf(l[:3], "%d", &got); err != nil {
			return fmt.Errorf("%s: malformed reply %q", what, l)
		}
		if len(l) > 3 && l[3] == '-' {
			continue
		}
		if got != code {
			return fmt.Errorf("%s: server replied %q, want %d", what, l, code)
		}
		return nil
	}
}
