"""fleet.py - the revcheck fleet on loopback for the chaos run: PostgreSQL, follow, origin, edges, nginx

Everything lives under one temporary directory and every process started
here is stopped by Fleet.close(), whatever way the run ends. The pieces are
started the way tests/integration/pg.sh and lib.sh start them: a cluster of
its own (initdb as `nobody` when run as root, trust authentication on
127.0.0.1, a free port), `filterbuild follow` publishing into a directory,
an origin revcheckd on that directory, two edges syncing from the origin's
/v1/filter and /v1/delta, and a third edge syncing from nginx serving the
directory as static files (config/nginx-filter-origin.conf's layout).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

PG_BIN = sorted(
    (os.path.join("/usr/lib/postgresql", d, "bin")
     for d in (os.listdir("/usr/lib/postgresql")
               if os.path.isdir("/usr/lib/postgresql") else [])),
    key=lambda p: [int(x) if x.isdigit() else x for x in p.split("/")])
PG_BIN = PG_BIN[-1] if PG_BIN else ""

# The settings the fleet runs with (docs/CHAOS.md states them).
# every node: --max-age, which makes the documented lag bound
MAX_AGE = int(os.environ.get("CHAOS_MAX_AGE") or 20)
HEAD_EVERY = 2        # follow --head-every
VALID_FOR = "2m"      # follow --valid-for: a re-base every 90 s or so
EXPIRY_GRACE = 2      # follow --expiry-grace
SYNC_INTERVAL = 1     # edges: --sync-interval
MAX_LAG = 10          # edges: --max-lag
OUT_FS_SIZE = "32m"   # the tmpfs holding follow's output directory

AS_ROOT = os.getuid() == 0


def free_port(taken):
    """A loopback TCP port in 12000-19999 nobody listens on (the integration
    tests draw theirs from 20000-31999)."""
    rnd = __import__("random").SystemRandom()
    for _ in range(200):
        p = rnd.randrange(12000, 20000)
        if p in taken:
            continue
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        taken.add(p)
        return p
    raise RuntimeError("no free port")


def http_status(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception:
        return 0, b""


class Proc:
    """One daemon, started again by start() after a stop; its log appends."""

    def __init__(self, name, argv, log, env=None):
        self.name, self.argv, self.log, self.env = name, argv, log, env
        self.p = None
        self.stopped = False    # SIGSTOPped

    @property
    def pid(self):
        return self.p.pid if self.p and self.p.poll() is None else None

    def start(self):
        with open(self.log, "ab") as lf:
            self.p = subprocess.Popen(self.argv, stdout=lf, stderr=lf,
                                      stdin=subprocess.DEVNULL,
                                      env=self.env, start_new_session=True)
        self.stopped = False

    def send(self, sig):
        if self.pid:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def stop(self, sig=signal.SIGTERM, wait=10.0):
        if not self.p:
            return
        if self.stopped:
            self.send(signal.SIGCONT)
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(wait)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, signal.SIGKILL)
                self.p.wait()
        # Anything it left in its session (nginx workers) goes too.
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Fleet:
    def __init__(self, revcheckd, filterbuild, src, log=print):
        self.revcheckd, self.filterbuild, self.src = revcheckd, filterbuild, src
        self.say = log
        self.ports = set()
        self.procs = {}
        self.mounted = False
        self.mount_error = None
        self.t = tempfile.mkdtemp(prefix="revcheck-chaos.")
        os.chmod(self.t, 0o711)
        self.key, self.pub = self.p("key.pem"), self.p("key.pub")
        self.outfs = self.p("outfs")
        self.out = os.path.join(self.outfs, "filters")
        self.pg_dir = self.p("pg")
        self.pg_port = None
        self.pg_url = None
        self.nodes = {}         # name -> base URL
        self.ng_port = None

    def p(self, *parts):
        return os.path.join(self.t, *parts)

    # --- PostgreSQL ----------------------------------------------------
    def pg_as(self, argv):
        return (["runuser", "-u", "nobody", "--"] + argv) if AS_ROOT else argv

    def pg_ctl(self, *args, timeout=90):
        argv = self.pg_as([os.path.join(PG_BIN, "pg_ctl"), "-D",
                           os.path.join(self.pg_dir, "data"), "-l",
                           os.path.join(self.pg_dir, "server.log"), "-w",
                           "-t", "60"] + list(args))
        return subprocess.run(argv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=timeout).returncode

    def pg_start_first(self):
        if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
            raise RuntimeError("no initdb under /usr/lib/postgresql "
                               "(apt-get install postgresql)")
        os.makedirs(os.path.join(self.pg_dir, "sock"))
        if AS_ROOT:
            shutil.chown(self.pg_dir, "nobody")
            shutil.chown(os.path.join(self.pg_dir, "sock"), "nobody")
        with open(os.path.join(self.t, "initdb.log"), "wb") as lf:
            subprocess.run(self.pg_as([
                os.path.join(PG_BIN, "initdb"), "-D",
                os.path.join(self.pg_dir, "data"), "-U", "revcheck",
                "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]),
                stdout=lf, stderr=lf, check=True)
        for _ in range(5):
            self.pg_port = free_port(self.ports)
            with open(os.path.join(self.pg_dir, "data", "postgresql.conf"),
                      "a") as f:
                f.write("port = %d\nlisten_addresses = '127.0.0.1'\n"
                        "unix_socket_directories = '%s'\nfsync = off\n"
                        "max_connections = 50\n"
                        % (self.pg_port, os.path.join(self.pg_dir, "sock")))
            if self.pg_ctl("start") == 0:
                self.pg_url = ("postgresql://revcheck@127.0.0.1:%d/postgres"
                               % self.pg_port)
                return
        raise RuntimeError("PostgreSQL did not start; see "
                           + os.path.join(self.pg_dir, "server.log"))

    def pg_running(self):
        return os.path.exists(os.path.join(self.pg_dir, "data",
                                           "postmaster.pid"))

    def pg_stop(self, mode="fast"):
        if self.pg_running():
            self.pg_ctl("stop", "-m", mode)

    def pg_start(self):
        return self.pg_ctl("start")

    def pg_pid(self):
        try:
            with open(os.path.join(self.pg_dir, "data", "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def psql(self, sql, timeout=15):
        """Runs sql; returns (ok, stdout, stderr)."""
        env = dict(os.environ, PGCONNECT_TIMEOUT="3",
                   PGOPTIONS="-c statement_timeout=10000")
        try:
            r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                                "-At", "-F", "\t", self.pg_url, "-c", sql],
                               capture_output=True, text=True, env=env,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, "", "timeout"
        return r.returncode == 0, r.stdout, r.stderr

    # --- the output file system ----------------------------------------
    def mount_out(self):
        os.makedirs(self.outfs)
        if not AS_ROOT:
            self.mount_error = "not root: mount(8) needs CAP_SYS_ADMIN"
            return
        r = subprocess.run(["mount", "-t", "tmpfs", "-o",
                            "size=%s,mode=0755" % OUT_FS_SIZE, "tmpfs",
                            self.outfs], capture_output=True, text=True)
        if r.returncode == 0:
            self.mounted = True
        else:
            self.mount_error = r.stderr.strip() or "mount failed"

    # --- daemons ---------------------------------------------------------
    def add(self, name, argv, env=None):
        pr = Proc(name, argv, self.p(name + ".log"), env)
        self.procs[name] = pr
        return pr

    def follow_argv(self):
        return [self.filterbuild, "follow", "--source", self.pg_url,
                "--key", self.key, "--out", self.out,
                "--interval", "200ms", "--valid-for", VALID_FOR,
                "--head-every", "%ds" % HEAD_EVERY,
                "--expiry-grace", "%ds" % EXPIRY_GRACE]

    def node_argv(self, name, port, extra):
        return [self.revcheckd, "--listen", "127.0.0.1:%d" % port,
                "--trusted-key", self.pub, "--state-dir", self.p("st-" + name),
                "--max-age", str(MAX_AGE), "--log-level", "info"] + extra

    def wait_ready(self, name, secs=60):
        url = self.nodes[name] + "/readyz"
        end = time.time() + secs
        while time.time() < end:
            if http_status(url, 1.0)[0] == 200:
                return True
            if self.procs[name].pid is None:
                return False
            time.sleep(0.2)
        return False

    def start_nginx(self):
        ng = self.p("nginx")
        os.makedirs(ng, exist_ok=True)
        self.ng_port = free_port(self.ports)
        conf = []
        if AS_ROOT:
            conf.append("user root;")
        conf.append("""worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port};
        location /filters/ {{ alias {out}/; etag on; }}
        location / {{ return 404; }}
    }}
}}
""".format(d=ng, port=self.ng_port, out=self.out))
        with open(os.path.join(ng, "nginx.conf"), "w") as f:
            f.write("\n".join(conf))
        pr = self.add("nginx", ["nginx", "-p", ng, "-c",
                                os.path.join(ng, "nginx.conf"), "-g",
                                "daemon off;"])
        pr.start()
        base = "http://127.0.0.1:%d" % self.ng_port
        for _ in range(100):
            if http_status(base + "/")[0] == 404:
                return base
            time.sleep(0.1)
        raise RuntimeError("nginx did not start; see %s/error.log" % ng)

    def start(self):
        subprocess.run([self.filterbuild, "keygen", "--out", self.key,
                        "--pub", self.pub], check=True,
                       stdout=subprocess.DEVNULL)
        self.mount_out()
        self.pg_start_first()
        ok, _, err = self.psql(open(os.path.join(
            self.src, "config/postgresql-schema.sql")).read())
        if not ok:
            raise RuntimeError("schema: " + err)
        fol = self.add("follow", self.follow_argv())
        return fol

    def start_nodes(self):
        o_port = free_port(self.ports)
        self.nodes["origin"] = "http://127.0.0.1:%d" % o_port
        self.add("origin", self.node_argv("origin", o_port, [
            "--filter-dir", self.out])).start()
        if not self.wait_ready("origin"):
            raise RuntimeError("the origin did not become ready; see "
                               + self.p("origin.log"))
        ng = self.start_nginx()
        o = self.nodes["origin"]
        ups = {"e1": o + "/v1/filter", "e2": o + "/v1/filter",
               "e3": ng + "/filters/current/filter.rcf"}
        for name, up in ups.items():
            port = free_port(self.ports)
            self.nodes[name] = "http://127.0.0.1:%d" % port
            self.add(name, self.node_argv(name, port, [
                "--upstream-filter", up, "--upstream-check", o + "/v1/check",
                "--upstream-insecure-http",
                "--sync-interval", str(SYNC_INTERVAL),
                "--max-lag", str(MAX_LAG),
                "--upstream-timeout", "2", "--upstream-retries", "1"])).start()
        for name in ups:
            if not self.wait_ready(name):
                raise RuntimeError("edge %s did not become ready; see %s"
                                   % (name, self.p(name + ".log")))

    def version(self):
        st, body = http_status(self.nodes["origin"] + "/v1/status")
        try:
            return json.loads(body)["filter"]["version"]
        except Exception:
            return None

    def close(self, keep_logs_in=None):
        for pr in self.procs.values():
            if pr.name != "nginx":
                pr.stop(signal.SIGKILL, wait=5)
        if "nginx" in self.procs:
            self.procs["nginx"].stop(signal.SIGTERM, wait=5)
        if self.pg_url and self.pg_running():
            try:
                self.pg_ctl("stop", "-m", "immediate", timeout=30)
            except Exception:
                pass
        if keep_logs_in:
            os.makedirs(keep_logs_in, exist_ok=True)
            for f in os.listdir(self.t):
                if f.endswith(".log"):
                    shutil.copy(self.p(f), os.path.join(keep_logs_in, f))
            for f in ("server.log",):
                src = os.path.join(self.pg_dir, f)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(keep_logs_in, "pg-" + f))
            src = self.p("nginx", "error.log")
            if os.path.exists(src):
                shutil.copy(src, os.path.join(keep_logs_in, "nginx-error.log"))
        if self.mounted:
            subprocess.run(["umount", "-l", self.outfs],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.environ.get("CHAOS_KEEP") == "1":
            print("chaos: kept %s (CHAOS_KEEP=1)" % self.t)
        else:
            shutil.rmtree(self.t, ignore_errors=True)
