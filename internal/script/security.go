package script

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// DefaultUser is the user keepalived runs scripts as when script_user is not
// set, if that user exists.
const DefaultUser = "keepalived_script"

// DefaultPath is the PATH scripts get, and the one a bare script name is
// searched in, unless the caller's environment sets PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Security mirrors keepalived's global_defs enable_script_security and
// script_user.
type Security struct {
	// Enforce is enable_script_security: refuse to run a script as root
	// (uid or gid 0) if a non-root user could modify or replace it.
	Enforce bool
	// User and Group are script_user username [groupname]. "" for User means
	// keepalived's default: DefaultUser if it exists, else the user vipstack
	// runs as. "" for Group means the user's primary group. Numeric ids are
	// accepted too.
	User, Group string
}

// Identity is the user and group a script runs as.
type Identity struct {
	UID, GID    uint32
	User, Group string // names, or the numbers when they have no name
}

// Root reports whether scripts run with root's uid or gid; only those need
// the enable_script_security path check.
func (id Identity) Root() bool { return id.UID == 0 || id.GID == 0 }

// Identity resolves sec.User and sec.Group against the user and group
// databases.
func (sec Security) Identity() (Identity, error) {
	if sec.User == "" && sec.Group != "" {
		return Identity{}, fmt.Errorf("script_user: group %q given without a user; want script_user USERNAME [GROUPNAME]", sec.Group)
	}
	var u *user.User
	if sec.User == "" {
		var err error
		u, err = user.Lookup(DefaultUser)
		if err != nil {
			var unknown user.UnknownUserError
			if !errors.As(err, &unknown) {
				return Identity{}, fmt.Errorf("script_user: look up default user %q: %w", DefaultUser, err)
			}
			if sec.Enforce {
				// keepalived 2.2.7 (measured) then runs no script at all: it
				// logs "Failed to set default user for notify script" and
				// "track script chk not found, ignoring", and the instances
				// run without their checks (-t exits 5). Running them as
				// root instead would ignore what the option asks; running
				// without them would hold VIPs without health checks.
				return Identity{}, fmt.Errorf("enable_script_security is set, script_user is not, and user %q does not exist: keepalived runs no script then "+
					"(its checks and notify scripts are dropped); want script_user USERNAME [GROUPNAME] in global_defs (e.g. `script_user root`, with root-owned scripts) "+
					"or a %s user", DefaultUser, DefaultUser)
			}
			// keepalived: "otherwise the uid/gid under which keepalived is running".
			return current(), nil
		}
	} else {
		var err error
		u, err = lookupUser(sec.User)
		if err != nil {
			return Identity{}, err
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return Identity{}, fmt.Errorf("script_user %q: uid %q is not a number", u.Username, u.Uid)
	}
	id := Identity{UID: uint32(uid), User: u.Username}
	if sec.Group == "" {
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return Identity{}, fmt.Errorf("script_user %q: primary gid %q is not a number", u.Username, u.Gid)
		}
		id.GID = uint32(gid)
		id.Group = groupName(u.Gid)
		return id, nil
	}
	g, err := lookupGroup(sec.Group)
	if err != nil {
		return Identity{}, err
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return Identity{}, fmt.Errorf("script_user group %q: gid %q is not a number", g.Name, g.Gid)
	}
	id.GID, id.Group = uint32(gid), g.Name
	return id, nil
}

func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
		if u, idErr := user.LookupId(name); idErr == nil {
			return u, nil
		}
	}
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return nil, fmt.Errorf("script_user %q: no such user; want an existing user name or uid", name)
	}
	return nil, fmt.Errorf("script_user %q: %w", name, err)
}

func lookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err == nil {
		return g, nil
	}
	if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
		if g, idErr := user.LookupGroupId(name); idErr == nil {
			return g, nil
		}
		// A bare gid with no name is still a valid gid to run as.
		return &user.Group{Gid: name, Name: name}, nil
	}
	var unknown user.UnknownGroupError
	if errors.As(err, &unknown) {
		return nil, fmt.Errorf("script_user group %q: no such group; want an existing group name or gid", name)
	}
	return nil, fmt.Errorf("script_user group %q: %w", name, err)
}

func current() Identity {
	uid, gid := os.Getuid(), os.Getgid()
	id := Identity{UID: uint32(uid), GID: uint32(gid), User: strconv.Itoa(uid), Group: strconv.Itoa(gid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		id.User = u.Username
	}
	id.Group = groupName(strconv.Itoa(gid))
	return id
}

func groupName(gid string) string {
	if g, err := user.LookupGroupId(gid); err == nil {
		return g.Name
	}
	return gid
}
