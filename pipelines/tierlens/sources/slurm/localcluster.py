"""A throw-away one-node Slurm cluster with accounting, on loopback, for tests and benchmarks.

Starts munged, MariaDB, slurmdbd, slurmctld and slurmd as root from a private folder: every
configuration file, socket, database and log lives there, every port is picked free, and
``stop()`` ends exactly the processes it started. Nothing depends on state left by an earlier
run. Needs root and the Debian packages slurmctld slurmd slurmdbd munge mariadb-server.

    with LocalCluster(workdir, plugstack_lines=["optional /path/tierlens_spank.so spool=..."]) as c:
        c.run(["srun", "hostname"])
        c.sacct_json(...)
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_NAME = "tltest"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonDied(RuntimeError):
    pass


def _wait_for(what: str, check, timeout: float, log: Path | None = None, interval: float = 0.2):
    """Poll `check` until it returns a truthy value; a start-up failure names its log."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except DaemonDied as e:
            last = e
            break
        except Exception as e:  # noqa: BLE001 - keep polling; report the last error
            last = e
        time.sleep(interval)
    tail = ""
    if log is not None and log.exists():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:])
    raise RuntimeError(f"{what} not ready after {timeout:.0f}s (last: {last!r}){tail}")


@dataclass
class LocalCluster:
    workdir: Path
    plugstack_lines: list[str] = field(default_factory=list)
    cluster_name: str = CLUSTER_NAME
    cpus: int = 2
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.workdir / "etc" / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.env.pop("SLURM_JOB_ID", None)

    # ---- life cycle -----------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if os.geteuid() != 0:
            raise PermissionError("a local Slurm cluster needs root")
        w = self.workdir
        for d in ("etc", "log", "run", "state", "slurmd", "mysql", "munge"):
            (w / d).mkdir(parents=True, exist_ok=True)
        os.chmod(w, 0o755)
        self._start_munge()
        self._start_mariadb()
        self._write_slurm_conf()
        self._start_slurmdbd()
        self._start_slurmctld()
        self._start_slurmd()

    def stop(self) -> None:
        ctld = self.procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            # jobs left by a failed test: end them through this cluster's own controller
            try:
                ids = self.run(["squeue", "-h", "-o", "%A"], check=False, timeout=20).stdout.split()
                if ids:
                    self.run(["scancel", *ids], check=False, timeout=20)
                    _wait_for("jobs to end", lambda: not self.run(
                        ["squeue", "-h", "-o", "%A"], check=False, timeout=20).stdout.strip(), 30)
            except (RuntimeError, subprocess.SubprocessError, OSError):
                pass
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadb", "munged"):
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        # slurmstepd processes of jobs still running belong to slurmd's session: gone with it.

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> subprocess.Popen:
        log = open(self.workdir / "log" / f"{name}.out", "ab")  # noqa: SIM115 - handed to Popen
        pre = None
        if user:
            pw = pwd.getpwnam(user)

            def pre() -> None:  # runs in the child
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
        try:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                 start_new_session=True, preexec_fn=pre, cwd=self.workdir)
        finally:
            log.close()
        self.procs[name] = p
        return p

    def _alive(self, name: str) -> bool:
        p = self.procs[name]
        if p.poll() is not None:
            raise DaemonDied(f"{name} exited with {p.returncode}; see {self.workdir / 'log'}")
        return True

    # ---- munge ------------------------------------------------------------------------------
    def _start_munge(self) -> None:
        m = self.workdir / "munge"
        key = m / "munge.key"
        key.write_bytes(os.urandom(1024))
        pw = pwd.getpwnam("munge")
        for p in (m, key):
            os.chown(p, pw.pw_uid, pw.pw_gid)
        os.chmod(m, 0o700)
        os.chmod(key, 0o400)
        self.munge_socket = m / "munge.socket"
        self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}",
                               "--num-threads=4"], user="munge")
        # the socket's folder must be reachable by every user who submits jobs
        _wait_for("munged", lambda: self._alive("munged") and self.munge_socket.exists(), 30,
                  m / "munged.log")
        os.chmod(m, 0o711)

    # ---- MariaDB ----------------------------------------------------------------------------
    def _start_mariadb(self) -> None:
        data = self.workdir / "mysql"
        pw = pwd.getpwnam("mysql")
        os.chown(data, pw.pw_uid, pw.pw_gid)
        subprocess.run(["mariadb-install-db", f"--datadir={data}", "--user=mysql",
                        "--auth-root-authentication-method=normal", "--skip-test-db",
                        "--skip-name-resolve"],
                       check=True, capture_output=True, timeout=300)
        self.db_port = free_port()
        self.db_socket = self.workdir / "run" / "mysqld.sock"
        os.chmod(self.workdir / "run", 0o777)
        self._spawn("mariadb", ["mariadbd", "--no-defaults", f"--datadir={data}", "--user=mysql",
                                f"--socket={self.db_socket}", f"--port={self.db_port}",
                                "--bind-address=127.0.0.1", "--skip-grant-tables",
                                "--skip-name-resolve", f"--pid-file={self.workdir / 'run' / 'mysqld.pid'}",
                                "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
                                f"--log-error={self.workdir / 'log' / 'mariadb.log'}"])

        def up() -> bool:
            self._alive("mariadb")
            with socket.create_connection(("127.0.0.1", self.db_port), timeout=1):
                return True
        _wait_for("MariaDB", up, 120, self.workdir / "log" / "mariadb.log")

    # ---- Slurm ------------------------------------------------------------------------------
    def _write_slurm_conf(self) -> None:
        w = self.workdir
        self.ctld_port, self.slurmd_port, self.dbd_port = free_port(), free_port(), free_port()
        auth = f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"
        dbd = w / "etc" / "slurmdbd.conf"
        dbd.write_text(
            auth
            + f"DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={self.dbd_port}\nSlurmUser=root\n"
            f"LogFile={w / 'log' / 'slurmdbd.log'}\nPidFile={w / 'run' / 'slurmdbd.pid'}\n"
            "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
            f"StoragePort={self.db_port}\nStorageUser=root\nStoragePass=none\n"
            "StorageLoc=slurm_acct_db\nDebugLevel=info\n")
        os.chmod(dbd, 0o600)
        plug = w / "etc" / "plugstack.conf"
        plug.write_text("\n".join(self.plugstack_lines) + "\n")
        self.plugstack = plug
        self.conf.write_text(
            auth
            + f"ClusterName={self.cluster_name}\nSlurmctldHost={self.node}(127.0.0.1)\n"
            f"SlurmctldPort={self.ctld_port}\nSlurmdPort={self.slurmd_port}\nSlurmUser=root\n"
            "CredType=cred/munge\nMpiDefault=none\nProctrackType=proctrack/linuxproc\n"
            "TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=1\n"
            "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\n"
            f"AccountingStoragePort={self.dbd_port}\nAccountingStoragePass={self.munge_socket}\n"
            "JobCompType=jobcomp/none\nMailProg=/bin/true\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n"
            "SchedulerType=sched/backfill\nMinJobAge=5\nInactiveLimit=0\nKillWait=5\nWaitTime=0\n"
            f"PlugStackConfig={plug}\nStateSaveLocation={w / 'state'}\nSlurmdSpoolDir={w / 'slurmd'}\n"
            f"SlurmctldPidFile={w / 'run' / 'slurmctld.pid'}\nSlurmdPidFile={w / 'run' / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={w / 'log' / 'slurmctld.log'}\nSlurmdLogFile={w / 'log' / 'slurmd.log'}\n"
            "SlurmctldDebug=info\nSlurmdDebug=verbose\n"
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN\n"
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP\n")

    def _start_slurmdbd(self) -> None:
        # slurmdbd reads slurmdbd.conf beside $SLURM_CONF
        self._spawn("slurmdbd", ["slurmdbd", "-D"])

        def up() -> bool:
            self._alive("slurmdbd")
            with socket.create_connection(("127.0.0.1", self.dbd_port), timeout=1):
                return True
        _wait_for("slurmdbd", up, 120, self.workdir / "log" / "slurmdbd.log")

    def _start_slurmctld(self) -> None:
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        _wait_for("slurmctld", lambda: self._alive("slurmctld") and self.run(
            ["scontrol", "ping"], check=False).stdout.count("UP") >= 1, 120,
            self.workdir / "log" / "slurmctld.log")

    def _start_slurmd(self) -> None:
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf)])

        def idle() -> bool:
            self._alive("slurmd")
            out = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False).stdout
            return "idle" in out
        _wait_for("slurmd", idle, 120, self.workdir / "log" / "slurmd.log")

    # ---- clients ----------------------------------------------------------------------------
    def run(self, argv: list[str], check: bool = True, timeout: float = 300,
            env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
        e = dict(self.env)
        if env:
            e.update(env)
        r = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        return r

    def wait_accounted(self, job_id: str, timeout: float = 120) -> dict:
        """Wait until slurmdbd has the job in a final state; returns its sacct --json entry."""
        def done() -> dict | None:
            r = self.run(["sacct", "--json", "-j", job_id], check=False)
            if r.returncode != 0:
                return None
            for job in json.loads(r.stdout).get("jobs", []):
                state = job.get("state", {})
                current = state.get("current") if isinstance(state, dict) else state
                if isinstance(current, list):
                    current = current[0] if current else ""
                if str(job.get("job_id")) == job_id and current not in ("PENDING", "RUNNING", None):
                    if all(s.get("time", {}).get("end") for s in job.get("steps", [])):
                        return job
            return None
        return _wait_for(f"accounting of job {job_id}", done, timeout,
                         self.workdir / "log" / "slurmdbd.log", interval=1.0)

    @staticmethod
    def available() -> str | None:
        """Why a local cluster cannot start here, or None when it can."""
        if os.geteuid() != 0:
            return "needs root"
        missing = [b for b in ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld",
                               "slurmd", "srun", "sbatch", "sacct") if not shutil.which(b)]
        return f"missing {', '.join(missing)}" if missing else None
