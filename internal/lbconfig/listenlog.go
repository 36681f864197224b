package lbconfig

// ListenHTTPLogFormat is haproxy's `option httplog` format, which a
// monitor or stats listen (mode http) logs its requests in. Its HTTP
// variables are filled for those sections only (internal/lb/web's
// RequestLog); frontends log in TCP formats.
const ListenHTTPLogFormat = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r"

// listenLogFormat checks a monitor or stats section's log format.
func listenLogFormat(l *ConnLog) error {
	if l == nil || l.Format == ListenHTTPLogFormat {
		return nil
	}
	_, err := ParseLogFormat(l.Format)
	return err
}
