// Package smtpalert sends keepalived's SMTP alert mails: one short plain
// text message per VRRP state change, over a plain SMTP conversation (RFC
// 5321: HELO, MAIL FROM, RCPT TO, DATA, QUIT) with the message format of
// RFC 5322, as keepalived 2.2.7 sends them (measured against a sink).
package smtpalert
