// Package script runs external scripts the way keepalived does for
// vrrp_script, notify and the LVS MISC_CHECK, as documented in
// keepalived.conf(5) (keepalived 2.2.7): sections SCRIPTS, "Quoted strings",
// global_defs script_user and enable_script_security, and vrrp_script.
//
// What is kept from keepalived:
//
//   - No shell. A command line is split into argv (Split) and argv[0] is
//     exec'd directly; a bare name is searched in PATH.
//   - Scripts run as script_user [group]: by default the user
//     "keepalived_script" if it exists, else the user vipstack runs as. The
//     supplementary groups are cleared, as keepalived's setgroups(1, &gid).
//   - enable_script_security (Security.Enforce): a script that would run with
//     uid 0 or gid 0 (or is set-uid/set-gid root) is refused unless the file
//     and every directory on its path are owned by root and not writable by a
//     non-root user. A world-writable directory with the sticky bit (/tmp) is
//     accepted, and group write is accepted when the group is root, exactly
//     as keepalived's check_script_secure. A script that runs as a non-root
//     user is not path-checked: it can do nothing its user could not do
//     anyway (keepalived skips the check too).
//   - Each script is the leader of its own process group. On timeout the
//     group gets SIGTERM, then SIGKILL after Runner.KillGrace (keepalived:
//     2 s), and the group is SIGKILLed again once the leader is gone so that
//     children it left behind die too. Scripts get SIGTERM if vipstack dies
//     (PR_SET_PDEATHSIG), as keepalived sets.
//   - Notify scripts are started and not waited for.
//
// What is stricter or different:
//
//   - Symlinks are followed component by component; the directory holding
//     each symlink is checked and the symlink itself must be owned by root.
//   - The environment is minimal: PATH=DefaultPath plus what the caller
//     passes, never vipstack's own environment.
//   - Security.Enforce is re-checked before every run, not only at startup.
package script
