#!/usr/bin/env python3
"""systemd's part of socket activation, for a test without systemd.

    activate.py SOCKET NOTIFY_LOG COMMAND [ARGS...]

Binds and listens on the Unix socket SOCKET (mode 0660), as mayurad.socket
makes systemd do, then starts COMMAND with it as fd 3 and LISTEN_FDS=1,
LISTEN_PID=<the command's pid>, and a notify socket in NOTIFY_SOCKET. Each
notification the command sends is a line of NOTIFY_LOG. SIGTERM and SIGINT
are passed on to the command; it exits as the command did (128 + N for a
signal N). Like systemd, it keeps its own copy of the socket while the
command runs.
"""

import os
import signal
import socket
import sys
import threading


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, log_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o117)  # made 0660, as SocketMode=0660
    listener.bind(path)
    os.umask(old)
    listener.listen(128)
    notify_path = path + ".notify"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)

    pid = os.fork()
    if pid == 0:
        try:
            # fd 3 is SD_LISTEN_FDS_START; LISTEN_PID must be the pid that
            # execs, which is this child's.
            if listener.fileno() != 3:
                os.dup2(listener.fileno(), 3)
            os.set_inheritable(3, True)
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), NOTIFY_SOCKET=notify_path)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _frame: os.kill(pid, s))

    done = threading.Event()

    def log_notifications():
        notify.settimeout(0.2)
        with open(log_path, "a") as log:
            while True:
                try:
                    message = notify.recv(4096)
                except socket.timeout:
                    if done.is_set():
                        return
                    continue
                log.write(message.decode(errors="replace").replace("\n", " ") + "\n")
                log.flush()

    reader = threading.Thread(target=log_notifications)
    reader.start()
    _, status = os.waitpid(pid, 0)
    done.set()
    reader.join()
    os.unlink(notify_path)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
