package keepalived

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// vi returns a valid vrrp_instance VI whose body ends with extra, which
// starts on line 7.
func vi(extra string) string {
	return "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  198.18.0.1\n }\n" + extra + "}\n"
}

// inst returns a vrrp_instance with the given name, VRID and VIP.
func inst(name, vrid, vip string) string {
	return "vrrp_instance " + name + " {\n interface eth0\n virtual_router_id " + vrid +
		"\n virtual_ipaddress {\n  " + vip + "\n }\n}\n"
}

// lvsWhy ends the refusal of an IPVS keyword.
const lvsWhy = ": it configures IPVS (LVS), which vipstack does not implement and this kernel does not have; " +
	"run keepalived for it, or balance with vipstack lb"

const script = "vrrp_script chk {\n script /bin/true\n}\n"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		conf  string
		files fstest.MapFS // besides k.conf
		want  string
	}{
		// Lexing and blocks.
		{
			name: "unterminated quote",
			conf: "vrrp_script chk {\n script \"/bin/true\n}\n",
			want: "k.conf:2: unterminated double quote\nk.conf:1: vrrp_script \"chk\" has no script line",
		},
		{
			name: "line continuation",
			conf: "global_defs {\n router_id \\\n  a\n}\n",
			want: "k.conf:2: line continuation (trailing \\) is not supported by vipstack\n" +
				"k.conf:3: unknown keyword \"a\" in global_defs (accepted: " + globalAccepted + ")",
		},
		{
			// keepalived 2.2.7 (measured) reads "auth_pass a{b" as
			// auth_pass a, then "{" and an unknown keyword b ("There are
			// 1 missing '}'s"), and runs with password "a"; taking "a{b"
			// would put another password on the wire than keepalived's.
			name: "unquoted brace inside a word splits it",
			conf: vi(" authentication {\n  auth_type PASS\n  auth_pass a{b\n }\n"),
			want: "k.conf:1: \"vrrp_instance\" block opened here is not closed\n" +
				"k.conf:9: auth_pass does not take a { } block",
		},
		{
			// keepalived 2.2.7 (measured with the daemon's -d dump)
			// expands these builtins anywhere on a line, quotes
			// included: auth_pass ${_PWD} and a$_PWD gave the config
			// directory, ${_INSTANCE} the host name, ${_RANDOM 1 1} 1,
			// "a${_HASH}b" a#b and a${_BANG}b a. vipstack read them as
			// text: another password than keepalived's on the wire, a
			// script path that does not exist. $_PWD/x is not expanded
			// (the name must end the line or come before a blank, "," or
			// ")"), nor are unknown names or ones in comments.
			name: "keepalived builtin definitions",
			conf: vi(" authentication {\n  auth_type PASS\n  auth_pass \"x${_PWD}\"\n }\n") +
				"vrrp_script a {\n script \"${_INSTANCE}/chk $_RANDOM x\"\n}\n" +
				"vrrp_script b {\n script \"/bin/chk ${_HASH} ${_BANG} ${_RANDOM 1 9} $_PWD/x $X ${X:-1} ${_NOPE}\" # ${_PWD}\n}\n",
			want: "k.conf:9: keepalived's builtin definition ${_PWD} is not supported by vipstack " +
				"(keepalived puts the directory of the configuration file there); write the value instead\n" +
				"k.conf:13: keepalived's builtin definition ${_INSTANCE} is not supported by vipstack " +
				"(keepalived puts its instance name (the host name unless -i is given) there); write the value instead\n" +
				"k.conf:13: keepalived's builtin definition $_RANDOM is not supported by vipstack " +
				"(keepalived puts a random number there); write the value instead\n" +
				"k.conf:16: keepalived's builtin definition ${_HASH} is not supported by vipstack " +
				"(keepalived puts # there); write the value instead\n" +
				"k.conf:16: keepalived's builtin definition ${_BANG} is not supported by vipstack " +
				"(keepalived puts ! there); write the value instead\n" +
				"k.conf:16: keepalived's builtin definition ${_RANDOM 1 9} is not supported by vipstack " +
				"(keepalived puts a random number there); write the value instead\n" +
				"k.conf:7: authentication has auth_type but no auth_pass\n" +
				"k.conf:12: vrrp_script \"a\" has no script line\n" +
				"k.conf:15: vrrp_script \"b\" has no script line",
		},
		{
			name: "definition",
			conf: "$IF=eth0\n",
			want: "k.conf:1: parameter definitions ($NAME=...) are not supported by vipstack",
		},
		{
			name: "sequence",
			conf: "~SEQ(i, 1, 3) vrrp_instance VI_$i {\n",
			want: "k.conf:1: sequence and list blocks (~SEQ, ~LST) are not supported by vipstack",
		},
		{
			name: "stray close brace",
			conf: vi("") + "}\n",
			want: "k.conf:8: unexpected \"}\" (no block is open)",
		},
		{
			name: "unclosed block reports where it opened",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  198.18.0.1\n\n",
			want: "k.conf:4: \"virtual_ipaddress\" block opened here is not closed\n" +
				"k.conf:1: \"vrrp_instance\" block opened here is not closed",
		},
		{
			name: "brace without keyword",
			conf: "{\n}\n",
			want: "k.conf:1: unexpected \"{\" (a block must follow a keyword)",
		},
		{
			name: "block after a value keyword",
			conf: vi(" priority 100 {\n }\n"),
			want: "k.conf:7: priority does not take a { } block",
		},
		{
			name: "value before a block keyword",
			conf: vi(" track_script chk {\n }\n"),
			want: "k.conf:7: track_script takes no value before its { } block, got 1",
		},
		{
			name: "block keyword without block",
			conf: vi(" track_script chk\n"),
			want: "k.conf:7: track_script needs a { } block",
		},
		{
			name: "instance without name",
			conf: "vrrp_instance {\n}\n",
			want: "k.conf:1: vrrp_instance takes exactly one name, got 0",
		},
		{
			name: "global_defs with a value",
			conf: "global_defs x {\n}\n",
			want: "k.conf:1: global_defs takes no value, got 1",
		},

		// Includes.
		{
			name: "include missing file",
			conf: "include nope.conf\n",
			want: "k.conf:1: include \"nope.conf\": nope.conf: open nope.conf: file does not exist",
		},
		{
			name:  "include cycle",
			conf:  "include a.conf\n",
			files: fstest.MapFS{"a.conf": {Data: []byte("include sub/b.conf\n")}, "sub/b.conf": {Data: []byte("include ../k.conf\n")}},
			want:  "sub/b.conf:1: include cycle: k.conf -> a.conf -> sub/b.conf -> k.conf",
		},
		{
			name:  "include too deep",
			conf:  "include 1\n",
			files: deepIncludes(10),
			want:  "8:1: include \"9\": includes nested more than 8 deep",
		},
		{
			name:  "include too large",
			conf:  "include big.conf\n",
			files: fstest.MapFS{"big.conf": {Data: make([]byte, MaxFileSize+1)}},
			want:  "k.conf:1: include \"big.conf\": big.conf: file is larger than 1048576 bytes (1 MiB)",
		},
		{
			name:  "too many files",
			conf:  strings.Repeat("include a.conf\n", 256),
			files: fstest.MapFS{"a.conf": {Data: []byte("# empty\n")}},
			want:  "k.conf:256: include \"a.conf\": more than 256 files read in total",
		},
		{
			name: "include braces",
			conf: "include {a,b}.conf\n",
			want: "k.conf:1: include \"{a,b}.conf\": brace expressions are not supported by vipstack (use * ? [...] globs)",
		},
		{
			name: "include outside the file system",
			conf: "include ../x.conf\n",
			want: "k.conf:1: include \"../x.conf\": resolves to \"../x.conf\", outside the readable file tree",
		},
		{
			name: "include variant",
			conf: "includea x.conf\n",
			want: "k.conf:1: keyword \"includea\" is not supported by vipstack (use include)",
		},
		{
			name: "include without file",
			conf: "include\n",
			want: "k.conf:1: include takes exactly one file name or glob, got 0",
		},
		{
			name:  "errors in included file name it",
			conf:  "include conf.d/*.conf\n",
			files: fstest.MapFS{"conf.d/x.conf": {Data: []byte("\n\nvirtual_server 1.2.3.4 80 {\n}\n")}},
			want:  "conf.d/x.conf:3: keyword \"virtual_server\" is not supported by vipstack" + lvsWhy,
		},

		// Top level and global_defs.
		{
			name: "unsupported top-level keyword",
			conf: "virtual_server 10.0.0.1 80 {\n real_server 10.0.0.2 80 {\n }\n}\n",
			want: "k.conf:1: keyword \"virtual_server\" is not supported by vipstack" + lvsWhy,
		},
		{
			name: "unknown top-level keyword",
			conf: "vrrp_instances VI {\n}\n",
			want: "k.conf:1: unknown keyword \"vrrp_instances\" in the top level (accepted: " + topAccepted + ")",
		},
		{
			name: "unknown global keyword",
			conf: "global_defs {\n foo\n}\n",
			want: "k.conf:2: unknown keyword \"foo\" in global_defs (accepted: " + globalAccepted + ")",
		},
		{
			name: "unsupported global keyword",
			conf: "global_defs {\n vrrp_strict\n}\n",
			want: "k.conf:2: keyword \"vrrp_strict\" is not supported by vipstack",
		},
		{
			name: "bad vrrp_version",
			conf: "global_defs {\n vrrp_version 4\n}\n",
			want: "k.conf:2: vrrp_version 4 is out of range (accepted: 2..3)",
		},
		// The scheduling keywords; keepalived 2.2.7 -t (measured) says
		// "invalid number 'abc'", "number '20' outside range [-20, 19]",
		// "Invalid vrrp process priority specified", "No vrrp process
		// priority specified", "number '0' outside range [1, 4294967295]",
		// "Invalid vrrp real-time limit - 0" and carries on without them.
		{
			name: "vrrp_rt_priority not a number",
			conf: "global_defs {\n vrrp_rt_priority abc\n}\n",
			want: `k.conf:2: vrrp_rt_priority "abc" is not an integer (accepted: 1..99)`,
		},
		{
			name: "vrrp_rt_priority without a value",
			conf: "global_defs {\n vrrp_rt_priority\n}\n",
			want: "k.conf:2: vrrp_rt_priority takes one value (1..99), got 0 values",
		},
		{
			name: "vrrp_priority above 19",
			conf: "global_defs {\n vrrp_priority 20\n}\n",
			want: "k.conf:2: vrrp_priority 20 is out of range (accepted: -20..19)",
		},
		{
			name: "vrrp_priority below -20",
			conf: "global_defs {\n vrrp_priority -21\n}\n",
			want: "k.conf:2: vrrp_priority -21 is out of range (accepted: -20..19)",
		},
		{
			name: "vrrp_priority not a number",
			conf: "global_defs {\n vrrp_priority x\n}\n",
			want: `k.conf:2: vrrp_priority "x" is not an integer (accepted: -20..19)`,
		},
		{
			name: "vrrp_priority without a value",
			conf: "global_defs {\n vrrp_priority\n}\n",
			want: "k.conf:2: vrrp_priority takes one value (-20..19), got 0 values",
		},
		{
			name: "vrrp_rlimit_rttime 0",
			conf: "global_defs {\n vrrp_rlimit_rttime 0\n}\n",
			want: "k.conf:2: vrrp_rlimit_rttime 0 is out of range (accepted: 1..2147483647)",
		},
		{
			name: "checker_rt_priority is refused: vipstack has no checker process",
			conf: "global_defs {\n checker_rt_priority 50\n}\n",
			want: `k.conf:2: keyword "checker_rt_priority" is not supported by vipstack`,
		},
		{
			name: "vrrp_rlimit_rttime not a number",
			conf: "global_defs {\n vrrp_rlimit_rttime 10ms\n}\n",
			want: `k.conf:2: vrrp_rlimit_rttime "10ms" is not an integer (accepted: 1..2147483647)`,
		},
		{
			name: "vrrp_no_swap with a value",
			conf: "global_defs {\n vrrp_no_swap yes\n}\n",
			want: "k.conf:2: vrrp_no_swap takes no value, got 1 values",
		},
		{
			name: "bad max_auto_priority",
			conf: "global_defs {\n max_auto_priority 100\n}\n",
			want: "k.conf:2: max_auto_priority 100 is out of range (accepted: -1..99)",
		},
		{
			name: "fractional garp delay",
			conf: "global_defs {\n vrrp_garp_master_delay 1.5\n}\n",
			want: "k.conf:2: vrrp_garp_master_delay \"1.5\" is not an integer (accepted: 0..4294)",
		},
		{
			name: "garp repeat zero",
			conf: "global_defs {\n vrrp_garp_master_repeat 0\n}\n",
			want: "k.conf:2: vrrp_garp_master_repeat 0 is out of range (accepted: 1..2147483647)",
		},
		{
			name: "bad garp interval",
			conf: "global_defs {\n vrrp_garp_interval 1ms\n}\n",
			want: "k.conf:2: vrrp_garp_interval \"1ms\" is not a number of seconds (accepted: 0..4294.967295 seconds, e.g. 1 or 0.5)",
		},
		{
			name: "startup delay too long",
			conf: "global_defs {\n vrrp_startup_delay 5000\n}\n",
			want: "k.conf:2: vrrp_startup_delay 5000 is out of range (accepted: 0..4294.967295 seconds)",
		},
		{
			name: "repeated global keyword across blocks",
			conf: "global_defs {\n router_id a\n}\nglobal_defs {\n router_id b\n}\n",
			want: "k.conf:5: router_id is already set at k.conf:2",
		},
		{
			name: "flag with a value",
			conf: "global_defs {\n enable_script_security yes\n}\n",
			want: "k.conf:2: enable_script_security takes no value, got 1 values",
		},
		{
			name: "script_user with three words",
			conf: "global_defs {\n script_user a b c\n}\n",
			want: "k.conf:2: script_user takes a user and an optional group, got 3 values",
		},

		// vrrp_script.
		{
			name: "script without script line",
			conf: "vrrp_script chk {\n interval 2\n}\n",
			want: "k.conf:1: vrrp_script \"chk\" has no script line",
		},
		{
			name: "script with extra words",
			conf: "vrrp_script chk {\n script /bin/check arg\n}\n",
			want: "k.conf:2: script: words after the command (\"arg\") are a user and group in keepalived, which vipstack does not support here; quote the whole command line, e.g. script \"/path/script arg\"",
		},
		{
			name: "empty script",
			conf: "vrrp_script chk {\n script \"\"\n}\n",
			want: "k.conf:2: script needs a command",
		},
		{
			name: "script with bad inner quoting",
			conf: "vrrp_script chk {\n script \"/bin/sh -c 'x\"\n}\n",
			want: "k.conf:2: script \"/bin/sh -c 'x\": missing terminating '",
		},
		{
			name: "script weight out of range",
			conf: "vrrp_script chk {\n script /bin/true\n weight 254\n}\n",
			want: "k.conf:3: weight 254 is out of range (accepted: -253..253)",
		},
		{
			name: "script weight option",
			conf: "vrrp_script chk {\n script /bin/true\n weight 2 sideways\n}\n",
			want: "k.conf:3: weight option \"sideways\" is invalid (accepted: reverse)",
		},
		{
			name: "script interval zero",
			conf: "vrrp_script chk {\n script /bin/true\n interval 0\n}\n",
			want: "k.conf:3: interval 0 is out of range (accepted: 0.000001..4294 seconds)",
		},
		{
			name: "script timeout not a number",
			conf: "vrrp_script chk {\n script /bin/true\n timeout soon\n}\n",
			want: "k.conf:3: timeout \"soon\" is not a number of seconds (accepted: 0.000001..4294 seconds, e.g. 1 or 0.5)",
		},
		{
			name: "script rise zero",
			conf: "vrrp_script chk {\n script /bin/true\n rise 0\n}\n",
			want: "k.conf:3: rise 0 is out of range (accepted: 1..2147483647)",
		},
		{
			name: "script fall missing",
			conf: "vrrp_script chk {\n script /bin/true\n fall\n}\n",
			want: "k.conf:3: fall takes one value (1..2147483647), got 0 values",
		},
		{
			name: "unknown script keyword",
			conf: "vrrp_script chk {\n script /bin/true\n retries 3\n}\n",
			want: "k.conf:3: unknown keyword \"retries\" in vrrp_script (accepted: " + scriptAccepted + ")",
		},
		{
			name: "duplicate script",
			conf: script + script,
			want: "k.conf:4: vrrp_script \"chk\" is already defined at k.conf:1",
		},

		// vrrp_instance settings.
		{
			name: "unknown instance keyword",
			conf: vi(" foo bar\n"),
			want: "k.conf:7: unknown keyword \"foo\" in vrrp_instance (accepted: " + instanceAccepted + ")",
		},
		{
			name: "unsupported instance keyword",
			conf: vi(" use_ipvlan\n"),
			want: "k.conf:7: keyword \"use_ipvlan\" is not supported by vipstack",
		},
		{
			name: "repeated keyword",
			conf: vi(" priority 100\n priority 101\n"),
			want: "k.conf:8: priority is already set at k.conf:7",
		},
		{
			name: "bad state",
			conf: vi(" state master\n"),
			want: "k.conf:7: state \"master\" is invalid (accepted: MASTER, BACKUP)",
		},
		{
			name: "interface required",
			conf: "vrrp_instance VI {\n virtual_router_id 1\n virtual_ipaddress {\n  198.18.0.1\n }\n}\n",
			want: "k.conf:1: vrrp_instance \"VI\": interface is required",
		},
		{
			name: "bad interface name",
			conf: "vrrp_instance VI {\n interface eth0:1\n virtual_router_id 1\n virtual_ipaddress {\n  198.18.0.1\n }\n}\n",
			want: "k.conf:2: interface \"eth0:1\" is not a valid interface name (1-15 characters, no \"/\", \":\" or blanks)",
		},
		{
			name: "virtual_router_id required",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_ipaddress {\n  198.18.0.1\n }\n}\n",
			want: "k.conf:1: vrrp_instance \"VI\": virtual_router_id is required (1..255)",
		},
		{
			name: "virtual_router_id zero",
			conf: inst("VI", "0", "198.18.0.1"),
			want: "k.conf:3: virtual_router_id 0 is out of range (accepted: 1..255)",
		},
		{
			name: "virtual_router_id too big",
			conf: inst("VI", "256", "198.18.0.1"),
			want: "k.conf:3: virtual_router_id 256 is out of range (accepted: 1..255)",
		},
		{
			name: "priority zero",
			conf: vi(" priority 0\n"),
			want: "k.conf:7: priority 0 is out of range (accepted: 1..255)",
		},
		{
			name: "priority not a number",
			conf: vi(" priority high\n"),
			want: "k.conf:7: priority \"high\" is not an integer (accepted: 1..255)",
		},
		{
			name: "IPv6 instance without virtual_ipaddress",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress_excluded {\n  fd00::1\n }\n}\n",
			want: "k.conf:1: vrrp_instance \"VI\": an IPv6 instance needs at least one virtual_ipaddress",
		},
		{
			name: "bad advert_int",
			conf: vi(" advert_int 300\n"),
			want: "k.conf:7: advert_int 300 is out of range (accepted: 0.01..255 seconds)",
		},
		{
			name: "fractional advert_int with version 2",
			conf: vi(" advert_int 0.5\n"),
			want: "k.conf:7: advert_int 0.5 is not valid for VRRP version 2 (accepted: whole seconds 1..255)",
		},
		{
			name: "advert_int not in 10ms steps with version 3",
			conf: vi(" version 3\n advert_int 0.015\n"),
			want: "k.conf:8: advert_int 0.015 is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)",
		},
		{
			name: "advert_int too long for version 3",
			conf: "global_defs {\n vrrp_version 3\n}\n" + vi(" advert_int 41\n"),
			want: "k.conf:10: advert_int 41 is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)",
		},
		{
			name: "bad version",
			conf: vi(" version 1\n"),
			want: "k.conf:7: version 1 is out of range (accepted: 2..3)",
		},
		{
			name: "preempt_delay too long",
			conf: vi(" preempt_delay 1000.5\n"),
			want: "k.conf:7: preempt_delay 1000.5 is out of range (accepted: 0..1000 seconds)",
		},
		{
			name: "preempt and nopreempt",
			conf: vi(" nopreempt\n preempt\n"),
			want: "k.conf:8: preempt conflicts with nopreempt at k.conf:7",
		},
		{
			name: "accept and no_accept",
			conf: vi(" accept\n no_accept\n"),
			want: "k.conf:8: no_accept conflicts with accept at k.conf:7",
		},
		{
			name: "garp_master_repeat zero",
			conf: vi(" garp_master_repeat 0\n"),
			want: "k.conf:7: garp_master_repeat 0 is out of range (accepted: 1..2147483647)",
		},
		{
			name: "duplicate instance",
			conf: inst("VI", "1", "198.18.0.1") + inst("VI", "2", "198.18.0.2"),
			want: "k.conf:8: vrrp_instance \"VI\" is already defined at k.conf:1",
		},
		{
			name: "same interface, VRID and family",
			conf: inst("A", "7", "198.18.0.1") + inst("B", "7", "198.18.0.2"),
			want: "k.conf:10: vrrp_instance \"B\" uses interface eth0, virtual_router_id 7 and IPv4 like vrrp_instance \"A\" at k.conf:1; one of them must differ",
		},
		{
			name: "same address in two instances",
			conf: inst("A", "7", "198.18.0.1") + inst("B", "8", "198.18.0.1/24"),
			want: "k.conf:12: address 198.18.0.1 on eth0 of vrrp_instance \"B\" is also in vrrp_instance \"A\" at k.conf:5; an address belongs to one instance " +
				"(the instance that lets it go would remove it from under the other)",
		},
		{
			name: "same address in an instance and another's excluded list",
			conf: inst("A", "7", "198.18.0.1") + "vrrp_instance B {\n interface eth0\n virtual_router_id 8\n virtual_ipaddress_excluded {\n  198.18.0.1 dev eth0\n }\n}\n",
			want: "k.conf:12: address 198.18.0.1 on eth0 of vrrp_instance \"B\" is also in vrrp_instance \"A\" at k.conf:5; an address belongs to one instance " +
				"(the instance that lets it go would remove it from under the other)",
		},
		{
			name: "same address twice in one instance",
			conf: vi(" virtual_ipaddress_excluded {\n  198.18.0.1/32\n }\n"),
			want: "k.conf:8: address 198.18.0.1 on eth0 is listed twice in vrrp_instance \"VI\" (first at k.conf:5)",
		},

		// Authentication.
		{
			name: "auth_type AH",
			conf: vi(" authentication {\n  auth_type AH\n  auth_pass x\n }\n"),
			want: "k.conf:8: auth_type AH is not supported by vipstack (accepted: PASS)",
		},
		{
			name: "bad auth_type",
			conf: vi(" authentication {\n  auth_type pass\n  auth_pass x\n }\n"),
			want: "k.conf:8: auth_type \"pass\" is invalid (accepted: PASS)",
		},
		{
			name: "auth_pass without auth_type",
			conf: vi(" authentication {\n  auth_pass secret\n }\n"),
			want: "k.conf:7: authentication has auth_pass but no auth_type (accepted: PASS)",
		},
		{
			name: "auth_type without auth_pass",
			conf: vi(" authentication {\n  auth_type PASS\n }\n"),
			want: "k.conf:7: authentication has auth_type but no auth_pass",
		},
		{
			name: "unknown authentication keyword",
			conf: vi(" authentication {\n  auth_type PASS\n  auth_pass x\n  auth_key y\n }\n"),
			want: "k.conf:10: unknown keyword \"auth_key\" in authentication (accepted: " + authAccepted + ")",
		},

		// Addresses.
		{
			name: "bad VIP",
			conf: inst("VI", "1", "198.18.0.300/24"),
			want: "k.conf:5: virtual_ipaddress entry \"198.18.0.300/24\" is not an address or address/length",
		},
		{
			name: "VIP prefix too long",
			conf: inst("VI", "1", "198.18.0.1/33"),
			want: "k.conf:5: virtual_ipaddress entry \"198.18.0.1/33\" is not an address or address/length",
		},
		{
			name: "VIP with zone",
			conf: inst("VI", "1", "fe80::1%eth0"),
			want: "k.conf:5: virtual_ipaddress entry \"fe80::1%eth0\" is not an address or address/length",
		},
		{
			name: "unsupported VIP option",
			conf: inst("VI", "1", "198.18.0.1 no_track"),
			want: "k.conf:5: virtual_ipaddress option \"no_track\" is not supported by vipstack",
		},
		{
			name: "unknown VIP option",
			conf: inst("VI", "1", "198.18.0.1 via 198.18.0.254"),
			want: "k.conf:5: unknown virtual_ipaddress option \"via\" (accepted: " + vipAccepted + ")",
		},
		{
			name: "VIP option without value",
			conf: inst("VI", "1", "198.18.0.1 dev"),
			want: "k.conf:5: virtual_ipaddress option \"dev\" needs a value",
		},
		{
			name: "VIP bad dev",
			conf: inst("VI", "1", "198.18.0.1 dev averyveryverylongname"),
			want: "k.conf:5: dev \"averyveryverylongname\" is not a valid interface name (1-15 characters, no \"/\", \":\" or blanks)",
		},
		{
			name: "brd on IPv6",
			conf: vi(" virtual_ipaddress_excluded {\n  fd00::1/64 brd 198.18.0.255\n }\n"),
			want: "k.conf:8: brd is only valid for IPv4 addresses, not fd00::1",
		},
		{
			name: "bad brd",
			conf: inst("VI", "1", "198.18.0.1/24 brd +"),
			want: "k.conf:5: brd \"+\" is not an IPv4 address",
		},
		{
			name: "bad scope",
			conf: inst("VI", "1", "198.18.0.1 scope universe"),
			want: "k.conf:5: scope \"universe\" is invalid (accepted: global, site, link, host, nowhere)",
		},
		{
			name: "label too long",
			conf: inst("VI", "1", "198.18.0.1 label eth0:averylonglabel"),
			want: "k.conf:5: label \"eth0:averylonglabel\" is longer than 15 characters",
		},
		{
			name: "mixed families",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n version 3\n virtual_ipaddress {\n  198.18.0.1\n  fd00::1\n }\n}\n",
			want: "k.conf:7: virtual_ipaddress fd00::1 is IPv6 but vrrp_instance \"VI\" has IPv4 addresses before it; put the other family in virtual_ipaddress_excluded or another instance",
		},
		{
			name: "IPv6 with instance version 2",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n version 2\n virtual_ipaddress {\n  fd00::1\n }\n}\n",
			want: "k.conf:6: vrrp_instance \"VI\" has IPv6 virtual addresses, which need VRRP version 3, but version 2 is set at k.conf:4; use vrrp_version 3",
		},
		{
			name: "IPv6 with global version 2",
			conf: "global_defs {\n vrrp_version 2\n}\n" + inst("VI", "1", "fd00::1"),
			want: "k.conf:8: vrrp_instance \"VI\" has IPv6 virtual addresses, which need VRRP version 3, but version 2 is set at k.conf:2; use vrrp_version 3",
		},
		{
			name: "unicast_src_ip of the other family",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n unicast_src_ip 198.18.0.2\n virtual_ipaddress {\n  fd00::1\n }\n}\n",
			want: "k.conf:4: unicast_src_ip 198.18.0.2 is IPv4 but the virtual addresses of vrrp_instance \"VI\" are IPv6",
		},
		{
			name: "bad unicast_src_ip",
			conf: vi(" unicast_src_ip 198.18.0\n"),
			want: "k.conf:7: unicast_src_ip \"198.18.0\" is not an IP address",
		},
		{
			name: "unicast_peer of the other family",
			conf: vi(" unicast_peer {\n  198.18.0.3\n  fd00::3\n }\n"),
			want: "k.conf:9: unicast_peer fd00::3 is IPv6 but the virtual addresses of vrrp_instance \"VI\" are IPv4",
		},
		{
			name: "dynamic_interfaces option",
			conf: "global_defs {\n dynamic_interfaces yes\n}\n" + vi(""),
			want: "k.conf:2: unknown dynamic_interfaces option \"yes\" (accepted: nothing or allow_if_changes)",
		},
		{
			name: "unicast_peer min_ttl",
			conf: vi(" unicast_peer {\n  198.18.0.3 min_ttl 254\n }\n"),
			want: "k.conf:8: unicast_peer option \"min_ttl\" is not supported by vipstack",
		},
		{
			name: "unicast_peer max_ttl",
			conf: vi(" unicast_peer {\n  198.18.0.3 max_ttl 255\n }\n"),
			want: "k.conf:8: unicast_peer option \"max_ttl\" is not supported by vipstack",
		},
		{
			name: "two unicast peers on one line",
			conf: vi(" unicast_peer {\n  198.18.0.3 198.18.0.4\n }\n"),
			want: "k.conf:8: unexpected \"198.18.0.4\" after unicast_peer address (one address per line)",
		},
		{
			name: "bad unicast_peer",
			conf: vi(" unicast_peer {\n  peer1\n }\n"),
			want: "k.conf:8: unicast_peer \"peer1\" is not an IP address",
		},

		// Tracking and notify.
		{
			name: "track_script weight out of range",
			conf: script + vi(" track_script {\n  chk weight -254\n }\n"),
			want: "k.conf:11: weight -254 is out of range (accepted: -253..253)",
		},
		{
			name: "track_script reverse",
			conf: script + vi(" track_script {\n  chk weight 10 reverse\n }\n"),
			want: "k.conf:11: track_script option \"reverse\" is not supported by vipstack",
		},
		{
			name: "track_script junk",
			conf: script + vi(" track_script {\n  chk heavy\n }\n"),
			want: "k.conf:11: unexpected \"heavy\" after track_script entry \"chk\" (accepted: NAME [weight -253..253])",
		},
		{
			name: "track_interface bad name",
			conf: vi(" track_interface {\n  eth/1\n }\n"),
			want: "k.conf:8: track_interface \"eth/1\" is not a valid interface name (1-15 characters, no \"/\", \":\" or blanks)",
		},
		{
			name: "notify with too many words",
			conf: vi(" notify_master /bin/notify.sh root root x\n"),
			want: "k.conf:7: notify_master: \"root root x\" after the command: too many words (accepted: the command line in quotes, then an optional user and group, e.g. notify_master \"/path/script arg\" root root)",
		},
		{
			name: "notify without command",
			conf: vi(" notify_fault\n"),
			want: "k.conf:7: notify_fault needs a command",
		},

		// Sync groups.
		{
			name: "sync group with undefined member",
			conf: inst("A", "1", "198.18.0.1") + "vrrp_sync_group G {\n group {\n  A B\n }\n}\n",
			want: "k.conf:8: vrrp_sync_group \"G\": member \"B\" is not a defined vrrp_instance",
		},
		{
			name: "instance in two sync groups",
			conf: inst("A", "1", "198.18.0.1") + inst("B", "2", "198.18.0.2") +
				"vrrp_sync_group G {\n group {\n  A B\n }\n}\nvrrp_sync_group H {\n group {\n  B\n }\n}\n",
			want: "k.conf:20: vrrp_sync_group \"H\": vrrp_instance \"B\" is already in vrrp_sync_group \"G\" at k.conf:15",
		},
		{
			name: "sync group listing a member twice",
			conf: inst("A", "1", "198.18.0.1") + inst("B", "2", "198.18.0.2") + "vrrp_sync_group G {\n group {\n  A B\n  A\n }\n}\n",
			want: "k.conf:18: vrrp_sync_group \"G\" lists \"A\" twice",
		},
		{
			name: "sync group without group",
			conf: "vrrp_sync_group G {\n notify /bin/true\n}\n",
			want: "k.conf:1: vrrp_sync_group \"G\" needs a group { } block naming at least one vrrp_instance",
		},
		{
			name: "sync group with unsupported keyword",
			conf: inst("A", "1", "198.18.0.1") + "vrrp_sync_group G {\n group {\n  A\n }\n track_interface {\n  eth1\n }\n}\n",
			want: "k.conf:12: keyword \"track_interface\" is not supported by vipstack",
		},
		{
			name: "duplicate sync group",
			conf: inst("A", "1", "198.18.0.1") + inst("B", "2", "198.18.0.2") +
				"vrrp_sync_group G {\n group {\n  A\n }\n}\nvrrp_sync_group G {\n group {\n  B\n }\n}\n",
			want: "k.conf:20: vrrp_sync_group \"G\" is already defined at k.conf:15",
		},
		{
			name: "weighted track_script in a sync group member",
			conf: "vrrp_script chk {\n script /bin/true\n weight 10\n}\n" +
				vi(" track_script {\n  chk\n }\n") + "vrrp_sync_group G {\n group {\n  VI\n }\n}\n",
			want: "k.conf:12: track_script \"chk\" has weight 10, but vrrp_instance \"VI\" is in vrrp_sync_group \"G\", where keepalived ignores weighted tracking; use weight 0 or track it on the sync group",
		},
		{
			name: "weighted track_interface in a sync group member",
			conf: vi(" track_interface {\n  eth1 weight 5\n }\n") + "vrrp_sync_group G {\n group {\n  VI\n }\n}\n",
			want: "k.conf:8: track_interface eth1 has weight 5, but vrrp_instance \"VI\" is in vrrp_sync_group \"G\", where keepalived ignores weighted tracking; use weight 0 or track it on the sync group",
		},

		{
			name: "lvs_sync_daemon_interface needs IPVS",
			conf: vi(" lvs_sync_daemon_interface eth1\n"),
			want: "k.conf:7: keyword \"lvs_sync_daemon_interface\" is not supported by vipstack" + lvsWhy,
		},
		{
			name: "repeated flag with a value is still an error",
			conf: vi(" nopreempt\n nopreempt x\n"),
			want: "k.conf:8: nopreempt is already set at k.conf:7",
		},
		// SMTP alerts.
		{
			name: "smtp_alert with a bad value",
			conf: vi(" smtp_alert maybe\n"),
			want: "k.conf:7: Invalid value 'maybe' for smtp_alert specified (accepted: nothing, true, on, yes, false, off, no)",
		},
		{
			name: "smtp_server port out of range",
			conf: "global_defs {\n smtp_server 127.0.0.1 70000\n}\n" + vi(""),
			want: "k.conf:2: smtp_server port 70000 is out of range (accepted: 1..65535)",
		},
		{
			name: "smtp_server not a host",
			conf: "global_defs {\n smtp_server smtp/server\n}\n" + vi(""),
			want: "k.conf:2: smtp_server \"smtp/server\" is neither an IP address nor a host name",
		},

		// Collection.
		{
			name: "errors are collected and capped",
			conf: vi(strings.Repeat(" foo\n", 25)),
			want: strings.TrimSuffix(strings.Repeat("unknown\n", 20), "\n") + "\n... and 5 more errors",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"k.conf": {Data: []byte(tt.conf)}}
			for name, f := range tt.files {
				fsys[name] = f
			}
			cfg, err := Parse("k.conf", []byte(tt.conf), fsys)
			if cfg != nil {
				t.Errorf("Parse returned a config along with error %v", err)
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			got := err.Error()
			if tt.name == "errors are collected and capped" {
				got = collapseUnknown(got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %v does not wrap an *Error", err)
			}
		})
	}
}

// collapseUnknown replaces each unknown-keyword line with "unknown", to keep
// the cap test readable.
func collapseUnknown(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.Contains(l, `unknown keyword "foo"`) {
			lines[i] = "unknown"
		}
	}
	return strings.Join(lines, "\n")
}

// deepIncludes returns files 1..n where each includes the next.
func deepIncludes(n int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := 1; i <= n; i++ {
		fsys[strconv.Itoa(i)] = &fstest.MapFile{Data: []byte("include " + strconv.Itoa(i+1) + "\n")}
	}
	return fsys
}

func TestParseMainTooLarge(t *testing.T) {
	_, err := Parse("k.conf", make([]byte, MaxFileSize+1), fstest.MapFS{})
	if want := "k.conf: file is larger than 1048576 bytes (1 MiB)"; err == nil || err.Error() != want {
		t.Errorf("Parse(too large) = %v, want %q", err, want)
	}
}
