package script

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "bare path", in: "/usr/bin/true", want: []string{"/usr/bin/true"}},
		{name: "blanks separate", in: " /bin/chk  a\tb\n c ", want: []string{"/bin/chk", "a", "b", "c"}},
		{name: "single quotes keep spaces", in: `/bin/chk 'a b'  c`, want: []string{"/bin/chk", "a b", "c"}},
		{name: "double quotes keep spaces", in: `/bin/chk "a  b" c`, want: []string{"/bin/chk", "a  b", "c"}},
		// The two examples from keepalived.conf(5) "Quoted strings".
		{name: "man page joined", in: `abcd" efg h jkl "mnop`, want: []string{"abcd efg h jkl mnop"}},
		{name: "man page three", in: `abcd "efg h jkl" mnop`, want: []string{"abcd", "efg h jkl", "mnop"}},
		{name: "empty quoted argument", in: `/bin/chk "" ''`, want: []string{"/bin/chk", "", ""}},
		{name: "other quote inside", in: `/bin/chk "it's" '"x"'`, want: []string{"/bin/chk", "it's", `"x"`}},
		{name: "single quotes are literal", in: `/bin/chk '\n$HOME'`, want: []string{"/bin/chk", `\n$HOME`}},
		{name: "no shell expansion", in: `/bin/chk $HOME * ; | > x`, want: []string{"/bin/chk", "$HOME", "*", ";", "|", ">", "x"}},
		{name: "double quote escapes", in: `x "\"q\" \\ \t\n\a\E\x41\101\cA\z"`, want: []string{"x", "\"q\" \\ \t\n\a\x1bAA\x01z"}},
		{name: "octal stops after three digits", in: `x "\1012"`, want: []string{"x", "A2"}},
		{name: "hex takes the low byte", in: `x "\x141"`, want: []string{"x", "A"}},
		{name: "backslash outside quotes", in: `x a\ b \'c`, want: []string{"x", "a b", "'c"}},
		{name: "empty", in: "", wantErr: `script command "": empty; want a program path and optional arguments`},
		{name: "blank", in: " \t ", wantErr: `script command " \t ": empty; want a program path and optional arguments`},
		{name: "unclosed single", in: `x 'a b`, wantErr: `script command "x 'a b": single quote at byte 2 is not closed`},
		{name: "unclosed double", in: `x "a b`, wantErr: `script command "x \"a b": double quote at byte 2 is not closed`},
		{name: "trailing backslash", in: `x a\`, wantErr: `script command "x a\\": trailing backslash escapes nothing`},
		{name: "bad hex", in: `x "\xg"`, wantErr: `script command "x \"\\xg\"": \x at byte 3 has no hex digits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("Split(%q) error (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
