#pragma once
// Privilege, as the init sheds it. Raw kernel calls only: this code runs in
// the in-sandbox init (statically linked, single-threaded).

#include <sys/types.h>

namespace mayura::caps {

// Every capability out of the bounding and inheritable sets, so no exec can
// ever gain one; the init keeps its own permitted set for its work.
int drop_bounding_and_inheritable();

// Root inside gets no capabilities from exec or setuid, and that can never be
// changed again; with no_new_privs, setuid binaries gain nothing either.
int lock_securebits();
int set_no_new_privs();

// Becomes the sandbox user: no supplementary groups, gid, uid, and then no
// capability in any set (the uid change clears them; capset makes sure).
int become_user(uid_t uid, gid_t gid);

// For the init's file helpers: file access as the sandbox user (fsuid,
// fsgid, no groups) with no capability, while the real and saved ids stay
// the init's, so nothing the sandbox user runs can signal (stop) a helper.
int act_as_user(uid_t uid, gid_t gid);

// The init itself: keep only what it needs to start commands as the sandbox
// user (setuid, setgid) and to kill what it started.
int keep_only_init_caps();

}  // namespace mayura::caps
