# expr's remote agent: started once per host and run (`ssh HOST 'exec python3 -c CODE'`), so the
# user's rc files run once; then one JSON object per line on stdin (requests, each with an
# `id`) and on stdout (events). This text is fixed: every parameter comes in a message.
# On EOF (expr ended or was killed, the connection dropped) every group it started is sent
# TERM, then KILL 2 s later, and the agent exits.
import json, os, pwd, resource, signal, subprocess, sys, threading, time

OUT = sys.stdout.buffer
LOCK = threading.Lock()
GROUPS = {}  # pgid -> leader start time, for every group started here
RUNS = {}  # id of a running `run` -> its group
GLOCK = threading.Lock()


def send(m):
    b = (json.dumps(m, separators=(",", ":")) + "\n").encode()
    with LOCK:
        OUT.write(b)
        OUT.flush()


def which(name):
    for d in os.environ.get("PATH", "").split(":"):
        f = os.path.join(d, name)
        if d.startswith("/") and os.path.isfile(f) and os.access(f, os.X_OK):
            return f
    return name


BASH = which("bash")
# The login shell that started this agent exec'd it, and bash lowers SHLVL on exec: without this a
# step's bash would think it is the first shell of an ssh session and read ~/.bashrc again.
try:
    if int(os.environ.get("SHLVL") or 0) < 1:
        os.environ["SHLVL"] = "1"
except ValueError:
    os.environ["SHLVL"] = "1"
try:
    SHELL = pwd.getpwuid(os.getuid()).pw_shell or "/bin/sh"
except Exception:
    SHELL = "/bin/sh"


def start_time(pid):
    # field 22 of /proc/PID/stat, as expr reads it
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        return int(s[s.rindex(")") + 2 :].split()[19])
    except Exception:
        return None


def alive(pg):
    try:
        os.killpg(pg, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def ours(pg, st):
    # the leader, while it is there, started when the record says
    if st is None:
        return True
    s = start_time(pg)
    return s is None or s == st


def code_of(status):
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return -1


def thread(f, *a):
    t = threading.Thread(target=f, args=a)
    t.daemon = True
    t.start()
    return t


def pump(i, fd):
    while True:
        try:
            b = os.read(fd, 65536)
        except OSError:
            b = b""
        if not b:
            break
        send({"ev": "out", "id": i, "data": b.decode("latin-1")})
    os.close(fd)
    send({"ev": "eof", "id": i})


def reap(i, p, t0, reader, floor):
    while True:
        try:
            _, status, ru = os.wait4(p.pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            status, ru = None, None
            break
    t1 = time.monotonic()
    p.returncode = 0 if status is None else code_of(status)  # reaped here: Popen never waits
    # what the step wrote before it ended goes out before its exit (a child of its that keeps
    # the pipe open does not hold the exit back)
    reader.join(0.05)
    m = {"ev": "exit", "id": i, "code": -1 if status is None else code_of(status)}
    m["wall_ms"] = (t1 - t0) * 1e3
    if ru is not None:
        m["user_ms"] = ru.ru_utime * 1e3
        m["sys_ms"] = ru.ru_stime * 1e3
        m["max_rss_kib"] = ru.ru_maxrss
        m["rss_floor_kib"] = floor
    send(m)


def spawn(m):
    i = m["id"]
    env = dict(os.environ)
    env.update(m.get("env") or {})
    cwd = m["cwd"]
    if not os.path.isdir(cwd):
        # exit_codes::CD_FAILED, as `cd DIR || exit 200` on a host without the agent
        send({"ev": "exit", "id": i, "code": 200, "error": "cd: %s: No such file or directory" % cwd})
        return
    r, w = os.pipe()
    # the fork carries this process's memory into the step until its exec, and wait4's peak
    # counts it: a peak not above this one's own is not the step's
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(
            [BASH, "-c", m["line"]], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=w, stderr=w, start_new_session=True, close_fds=True,
        )
    except OSError as e:
        os.close(r)
        os.close(w)
        send({"ev": "exit", "id": i, "code": 127, "error": "cannot start bash: %s" % e})
        return
    os.close(w)
    with GLOCK:
        GROUPS[p.pid] = start_time(p.pid)
    send({"ev": "started", "id": i, "pgid": p.pid, "start": GROUPS.get(p.pid)})
    reader = thread(pump, i, r)
    thread(reap, i, p, t0, reader, floor)


def stop(pg, st, grace):
    """TERM the group, KILL what is left after `grace` s; True when it is gone."""
    if not alive(pg) or not ours(pg, st):
        return True
    try:
        os.killpg(pg, signal.SIGTERM)
    except OSError:
        pass
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if not alive(pg):
            return True
        time.sleep(0.005)
    try:
        os.killpg(pg, signal.SIGKILL)
    except OSError:
        pass
    end = time.monotonic() + 2
    while time.monotonic() < end:
        if not alive(pg):
            return True
        time.sleep(0.01)
    return False


def op_stop(m):
    send({"ev": "reply", "id": m["id"], "gone": stop(m["pgid"], m.get("start"), m.get("grace_ms", 0) / 1e3)})


def op_run(m):
    data = m.get("input")
    try:
        p = subprocess.Popen(
            [SHELL, "-c", m["script"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
            start_new_session=True, close_fds=True,
        )
    except OSError as e:
        send({"ev": "reply", "id": m["id"], "error": "cannot start %s: %s" % (SHELL, e)})
        return
    # a script runs in a group of its own: recorded, so that a cancel or expr's end stops it
    with GLOCK:
        GROUPS[p.pid] = start_time(p.pid)
        RUNS[m["id"]] = p.pid
    try:
        out, err = p.communicate(
            None if data is None else data.encode("latin-1"), timeout=m.get("timeout_ms", 60000) / 1e3
        )
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
        send({"ev": "reply", "id": m["id"], "error": "timed out"})
        return
    finally:
        with GLOCK:
            RUNS.pop(m["id"], None)
    send({"ev": "reply", "id": m["id"], "code": code_of_rc(p.returncode),
          "out": out.decode("latin-1"), "err": err.decode("latin-1")})


def stop_group(pg):
    # TERM, then KILL what is left after a second
    try:
        os.killpg(pg, signal.SIGTERM)
    except OSError:
        return
    end = time.monotonic() + 1
    while alive(pg) and time.monotonic() < end:
        time.sleep(0.02)
    try:
        os.killpg(pg, signal.SIGKILL)
    except OSError:
        pass


def code_of_rc(rc):
    # as ssh says it: a command killed by a signal ends the session with 255
    return 255 if rc < 0 else rc


def zombie_or_gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        return s[s.rindex(")") + 2 :].startswith("Z")
    except Exception:
        return True


def quiet_or_gone(pid):
    """A kernel thread, a zombie, gone, or older than two seconds: an empty environment that
    stays so (only a young process can be in the middle of the exec that empties it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        fields = s[s.rindex(")") + 2 :].split()
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        age = up - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return fields[0] in ("Z", "X") or int(fields[6]) & 0x00200000 != 0 or age > 2
    except Exception:
        return True


def scan(want, skip):
    """One look: the marked processes not in skip, and how many others read with an empty
    environment (one in the middle of an exec does, for a moment)."""
    me = os.getpid()
    found, unsure = [], 0
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me or int(d) in skip:
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
        except FileNotFoundError:
            continue
        except OSError:
            # unreadable for a moment (in the middle of an exec): looked at again
            if not quiet_or_gone(int(d)):
                unsure += 1
            continue
        if not env:
            if not quiet_or_gone(int(d)):
                unsure += 1
            continue
        if any(kv.startswith(want) for kv in env.split(b"\0")):
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                cmd = ""
            found.append([int(d), cmd])
    return found, unsure


def freeze(want, done):
    """SIGSTOP what a look finds, look again for what it forked meanwhile, until a look finds
    nothing new (a stopped process forks no more)."""
    frozen, pauses = [], 0
    for _ in range(200):
        found, unsure = scan(want, done | {p for p, _ in frozen})
        if not found:
            if unsure == 0 or pauses >= 5:
                break
            pauses += 1
            time.sleep(0.01)
            continue
        for pid, _ in found:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        frozen += found
    return frozen


def stop_found(found, grace):
    """TERM (pending before the CONT wakes them), KILL what is left after grace: the pids
    still alive."""
    for pid, _ in found:
        for sig in (signal.SIGTERM, signal.SIGCONT):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
    end = time.monotonic() + grace
    while any(not zombie_or_gone(p) for p, _ in found) and time.monotonic() < end:
        time.sleep(0.02)
    for pid, _ in found:
        if not zombie_or_gone(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    end = time.monotonic() + 0.5
    while any(not zombie_or_gone(p) for p, _ in found) and time.monotonic() < end:
        time.sleep(0.02)
    return [p for p, _ in found if not zombie_or_gone(p)]


def op_sweep(m):
    want = m["want"].encode()
    found, left = [], []
    for rnd in range(6):
        frozen = freeze(want, {p for p, _ in found})
        if not frozen:
            break
        if rnd == 5:
            # what TERM handlers still start after five rounds: KILL, which no handler sees
            for pid, _ in frozen:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            left += stop_found(frozen, 0)
        else:
            left += stop_found(frozen, m.get("grace_ms", 0) / 1e3)
        found += frozen
    send({"ev": "reply", "id": m["id"], "found": found, "left": left})


def handle(m):
    op, i = m.get("op"), m.get("id")
    if op == "spawn":
        spawn(m)
    elif op == "alive":
        pg = m["pgid"]
        send({"ev": "reply", "id": i, "alive": pg > 1 and alive(pg) and ours(pg, m.get("start"))})
    elif op == "stop":
        thread(op_stop, m)
    elif op == "run":
        thread(op_run, m)
    elif op == "cancel":
        # a run expr no longer waits for (it was interrupted): its group is stopped
        with GLOCK:
            pg = RUNS.get(m.get("target"))
        if pg is not None:
            thread(stop_group, pg)
        send({"ev": "reply", "id": i})
    elif op == "sweep":
        thread(op_sweep, m)
    elif op == "mkdir":
        try:
            os.makedirs(os.path.join(m["base"], m["path"]), exist_ok=True)
            send({"ev": "reply", "id": i})
        except OSError as e:
            send({"ev": "reply", "id": i, "error": str(e)})
    else:
        send({"ev": "reply", "id": i, "error": "unknown op %r" % op})


def main():
    send({"ev": "hello", "v": 1, "pid": os.getpid(), "python": sys.version.split()[0]})
    for line in sys.stdin.buffer:
        try:
            m = json.loads(line)
        except ValueError:
            continue
        try:
            handle(m)
        except Exception as e:
            send({"ev": "reply", "id": m.get("id"), "error": "%s: %s" % (type(e).__name__, e)})
    # EOF: expr is gone; nothing it started here outlives it
    with GLOCK:
        groups = list(GROUPS.items())
    left = [(pg, st) for pg, st in groups if alive(pg) and ours(pg, st)]
    for pg, _ in left:
        try:
            os.killpg(pg, signal.SIGTERM)
        except OSError:
            pass
    end = time.monotonic() + 2
    while any(alive(pg) for pg, _ in left) and time.monotonic() < end:
        time.sleep(0.02)
    for pg, _ in left:
        try:
            os.killpg(pg, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


main()
