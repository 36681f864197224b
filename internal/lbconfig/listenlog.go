package lbconfig

// listenLogFormat checks a monitor or stats section's log format.
func listenLogFormat(l *ConnLog) error {
	if l == nil || l.Format == HTTPLogFormat {
		return nil
	}
	if l.Format == HTTPLogCLFFormat {
		_, err := ParseHTTPLogFormat(l.Format)
		return err
	}
	_, err := ParseLogFormat(l.Format)
	return err
}
