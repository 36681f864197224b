# Shared by the scripts that build a tool from its pinned module under
# tools/NAME into ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/NAME/<hash of
# go.sum>/NAME (hack/helm-binary.sh, hack/promtool-binary.sh). Source it,
# then:
#
#   toolcache_start NAME "$@"   handles --path, prints the path and exits
#                               when cached; otherwise takes the lock (a
#                               concurrent run builds once), enters the
#                               module and makes $tmp, removed on exit
#   go build ... -o "$tmp/NAME" ...
#   toolcache_done              moves $tmp into place, prints the path

toolcache_start() {
	name=$1
	shift
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	mod="$root/tools/$name"
	key=$(sha256sum <"$mod/go.sum" | cut -c1-16)
	base="${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/$name"
	dir="$base/$key"
	bin="$dir/$name"
	case "${1:-}" in
	--path)
		echo "$bin"
		exit 0
		;;
	"") ;;
	*)
		echo "usage: $0 [--path]" >&2
		exit 2
		;;
	esac
	if [ -x "$bin" ]; then
		echo "$bin"
		exit 0
	fi
	mkdir -p "$base"
	exec 9>"$base/.lock"
	flock 9
	if [ -x "$bin" ]; then # another run built it while we waited
		echo "$bin"
		exit 0
	fi
	cd "$mod"
	tmp=$(mktemp -d "$base/.build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	start=$SECONDS
	export CGO_ENABLED=0
}

toolcache_done() {
	echo "$name-binary: built in $((SECONDS - start))s" >&2
	rm -rf "$dir"
	chmod 755 "$tmp"
	mv "$tmp" "$dir"
	trap - EXIT
	echo "$bin"
}
