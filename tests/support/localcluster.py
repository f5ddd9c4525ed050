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
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.processes import free_port

CLUSTER_NAME = "tltest"


class DaemonDied(RuntimeError):
    pass


def wait_for(what: str, check, timeout: float, log: Path | None = None, interval: float = 0.2):
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


SANE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLIENTS = ("srun", "sbatch", "salloc", "sacct", "squeue", "scontrol", "sinfo", "scancel", "sacctmgr")


class HostRoot:
    """The cluster's programs are this machine's own."""

    name = "host"
    tree = Path("/")

    def argv(self, argv: list[str], user: str | None = None, cwd: Path | None = None) -> list[str]:
        return list(argv)

    def ids(self, user: str) -> tuple[int, int]:
        pw = pwd.getpwnam(user)
        return pw.pw_uid, pw.pw_gid

    def preexec(self, user: str | None):
        if not user:
            return None
        uid, gid = self.ids(user)

        def pre() -> None:  # runs in the child
            os.setgid(gid)
            os.setuid(uid)

        return pre

    def which(self, program: str) -> bool:
        return shutil.which(program) is not None

    def client_path(self) -> str:
        return os.environ.get("PATH", SANE_PATH)

    def close(self) -> None:
        pass


#: ioctl on an nsfs file: the mount namespace's 64-bit id (Linux 6.11+; NS_GET_MNTNS_ID, _IOR(0xb7, 5, u64))
_NS_GET_MNTNS_ID = 0x8008B705


def _new_mount_namespace_id(cpu: int) -> int | None:
    """The id a mount namespace created now on ``cpu`` gets (None where the kernel does not say)."""
    probe = (
        "import fcntl, os, struct\n"
        "fd = os.open('/proc/self/ns/mnt', os.O_RDONLY)\n"
        f"print(struct.unpack('Q', fcntl.ioctl(fd, {_NS_GET_MNTNS_ID}, bytes(8)))[0])"
    )
    r = subprocess.run(
        ["taskset", "-c", str(cpu), "unshare", "--mount", "python3", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def _cpu_of_lowest_namespace_id() -> int | None:
    """The CPU on which a new mount namespace gets the lowest id, or None if it does not matter.

    Linux 6.18 hands out namespace ids from per-CPU batches, so they are not in creation order
    across CPUs, and mount(2) refuses (EINVAL) to bind a mount-namespace file whose id is not
    above the caller's namespace's (its guard against reference loops). job_container/tmpfs binds
    each job's new namespace inside slurmstepd's; with slurmstepd in the tree's namespace, a job
    whose namespace came from the other CPU's lower batch failed to start, at random. On a real
    node slurmd runs in the boot namespace, whose id is the lowest of all. Creating the tree's
    namespace on the CPU whose batch is lowest puts its id below every later one.
    """
    if not shutil.which("taskset"):
        return None
    ids = {cpu: _new_mount_namespace_id(cpu) for cpu in sorted(os.sched_getaffinity(0))}
    known = {cpu: i for cpu, i in ids.items() if i is not None}
    return min(known, key=known.__getitem__) if len(known) > 1 else None


class TreeRoot(HostRoot):
    """The cluster's programs come from another Debian release's root filesystem.

    The tree is mounted as the lower layer of an overlay and made the root (pivot_root) of a mount
    namespace of its own, held open by one `sleep` process: packages a test installs (the plugin's
    .deb) land in a throw-away upper layer, and the host sees none of the mounts. A real root, not
    a chroot: a job container (job_container/tmpfs, namespace/linux) enters the job's mount
    namespace with setns(), which resets the root to the namespace's own and would leave a chroot.
    Host folders the cluster shares with the tests (its work folder, the repository) are bound at
    the same paths, so a path means the same thing inside and out. The network is the host's:
    every daemon binds loopback on a free port. Host-side tools (the ingest, doctor) reach the
    tree's Slurm clients through small wrapper scripts put first on their PATH.
    """

    def __init__(self, name: str, tree: Path, binds: list[Path]) -> None:
        self.name, self.tree = name, Path(tree)
        self.dir = Path(tempfile.mkdtemp(prefix=f"tierlens-root-{name}-", dir="/var/tmp"))
        merged = self.dir / "merged"
        for d in ("upper", "work", "merged", "bin"):
            (self.dir / d).mkdir()
        script = "\n".join(
            [
                "set -e",
                f"mount -t overlay overlay -o lowerdir={self.tree},upperdir={self.dir / 'upper'},"
                f"workdir={self.dir / 'work'} {merged}",
                f"mount -t proc proc {merged}/proc",
                f"mount --rbind /sys {merged}/sys",
                f"mount --rbind /dev {merged}/dev",
                f"mount -t tmpfs -o mode=0755 tmpfs {merged}/run",
                *[f"mkdir -p {merged}{b} && mount --rbind {b} {merged}{b}" for b in binds],
                # the node's own name must resolve inside as it does outside
                f"cat /etc/hosts > {merged}/etc/hosts",
                f"mkdir -p {merged}/.host && cd {merged} && pivot_root . .host && cd /",
                "umount -l /.host 2>/dev/null || /.host/usr/bin/umount -l /.host",
                "rmdir /.host",
                "echo ready",
                "exec sleep infinity",
            ]
        )
        cpu = _cpu_of_lowest_namespace_id()
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        self.holder = subprocess.Popen(
            [*pin, "unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        line = self.holder.stdout.readline().strip()
        if line != "ready":
            err = self.holder.stderr.read() if self.holder.poll() is not None else ""
            self.close()
            raise RuntimeError(f"cannot enter the {name} root filesystem {tree}: {err.strip() or line}")
        self._write_wrappers()

    def argv(self, argv: list[str], user: str | None = None, cwd: Path | None = None) -> list[str]:
        # entering the mount namespace puts the caller at its root, the tree
        drop = []
        if user:
            uid, gid = self.ids(user)
            drop = ["chroot", f"--userspec={uid}:{gid}", "--groups=", "/"]
        return [
            "nsenter",
            "-t",
            str(self.holder.pid),
            "-m",
            "--",
            *drop,
            "env",
            "-C",
            str(cwd or "/"),
            f"PATH={SANE_PATH}",
            *argv,
        ]

    def ids(self, user: str) -> tuple[int, int]:
        for line in (self.tree / "etc" / "passwd").read_text().splitlines():
            f = line.split(":")
            if f[0] == user:
                return int(f[2]), int(f[3])
        raise KeyError(f"no user {user} in {self.tree}/etc/passwd")

    def preexec(self, user: str | None):
        return None  # chroot --userspec drops the privileges, after entering the tree

    def which(self, program: str) -> bool:
        return any((self.tree / d / program).exists() for d in ("usr/sbin", "usr/bin", "sbin", "bin"))

    def _write_wrappers(self) -> None:
        for c in CLIENTS:
            w = self.dir / "bin" / c
            w.write_text(
                "#!/bin/sh\n# the Slurm client of the tree, run from the caller's folder\n"
                f"exec nsenter -t {self.holder.pid} -m -- env PATH={SANE_PATH} "
                f'sh -c \'cd "$0" 2>/dev/null || cd /; exec "$@"\' "$PWD" {c} "$@"\n'
            )
            w.chmod(0o755)

    def client_path(self) -> str:
        return f"{self.dir / 'bin'}:{os.environ.get('PATH', SANE_PATH)}"

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


HOST = HostRoot()


@dataclass
class LocalCluster:
    workdir: Path
    plugstack_lines: list[str] = field(default_factory=list)
    cluster_name: str = CLUSTER_NAME
    cpus: int = 2
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    # where slurmctld & co. come from: the host, or a newer release's tree (TreeRoot)
    root: HostRoot = HOST
    # extra slurm.conf lines (e.g. a job container); later lines win in Slurm's parser
    extra_conf: str = ""
    # where MariaDB comes from, when not from `root`
    db_root: HostRoot | None = None

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.workdir / "etc" / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.env.pop("SLURM_JOB_ID", None)

    @property
    def client_env(self) -> dict[str, str]:
        """What a host-side tool (the ingest, doctor) needs to reach this cluster's sacct."""
        return {"SLURM_CONF": str(self.conf), "PATH": self.root.client_path()}

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
                    wait_for(
                        "jobs to end",
                        lambda: not self.run(["squeue", "-h", "-o", "%A"], check=False, timeout=20).stdout.strip(),
                        30,
                    )
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

    def _spawn(
        self, name: str, argv: list[str], user: str | None = None, root: HostRoot | None = None
    ) -> subprocess.Popen:
        root = root or self.root
        log = open(self.workdir / "log" / f"{name}.out", "ab")  # noqa: SIM115 - handed to Popen
        try:
            p = subprocess.Popen(
                root.argv(argv, user, self.workdir),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=root.preexec(user),
                cwd=self.workdir,
            )
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
        uid, gid = self.root.ids("munge")
        for p in (m, key):
            os.chown(p, uid, gid)
        os.chmod(m, 0o700)
        os.chmod(key, 0o400)
        self.munge_socket = m / "munge.socket"
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={m / 'munged.pid'}",
                f"--log-file={m / 'munged.log'}",
                f"--seed-file={m / 'munged.seed'}",
                "--num-threads=4",
            ],
            user="munge",
        )
        # the socket's folder must be reachable by every user who submits jobs
        wait_for("munged", lambda: self._alive("munged") and self.munge_socket.exists(), 30, m / "munged.log")
        os.chmod(m, 0o711)

    # ---- MariaDB ----------------------------------------------------------------------------
    def _start_mariadb(self) -> None:
        data = self.workdir / "mysql"
        db_root = self.db_root or self.root
        os.chown(data, *db_root.ids("mysql"))
        subprocess.run(
            db_root.argv(
                [
                    "mariadb-install-db",
                    f"--datadir={data}",
                    "--user=mysql",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    "--skip-name-resolve",
                ],
                cwd=self.workdir,
            ),
            check=True,
            capture_output=True,
            timeout=300,
        )
        self.db_port = free_port()
        self.db_socket = self.workdir / "run" / "mysqld.sock"
        os.chmod(self.workdir / "run", 0o777)
        self._spawn(
            "mariadb",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={data}",
                "--user=mysql",
                f"--socket={self.db_socket}",
                f"--port={self.db_port}",
                "--bind-address=127.0.0.1",
                "--skip-grant-tables",
                "--skip-name-resolve",
                f"--pid-file={self.workdir / 'run' / 'mysqld.pid'}",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=16M",
                f"--log-error={self.workdir / 'log' / 'mariadb.log'}",
            ],
            root=db_root,
        )

        def up() -> bool:
            self._alive("mariadb")
            with socket.create_connection(("127.0.0.1", self.db_port), timeout=1):
                return True

        wait_for("MariaDB", up, 120, self.workdir / "log" / "mariadb.log")

    # ---- Slurm ------------------------------------------------------------------------------
    def _write_slurm_conf(self) -> None:
        w = self.workdir
        self.ctld_port, self.slurmd_port, self.dbd_port = free_port(), free_port(), free_port()
        auth = f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"
        dbd = w / "etc" / "slurmdbd.conf"
        dbd.write_text(
            auth + f"DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={self.dbd_port}\nSlurmUser=root\n"
            f"LogFile={w / 'log' / 'slurmdbd.log'}\nPidFile={w / 'run' / 'slurmdbd.pid'}\n"
            "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
            f"StoragePort={self.db_port}\nStorageUser=root\nStoragePass=none\n"
            "StorageLoc=slurm_acct_db\nDebugLevel=info\n"
        )
        os.chmod(dbd, 0o600)
        plug = w / "etc" / "plugstack.conf"
        plug.write_text("\n".join(self.plugstack_lines) + "\n")
        self.plugstack = plug
        self.conf.write_text(
            auth + f"ClusterName={self.cluster_name}\nSlurmctldHost={self.node}(127.0.0.1)\n"
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
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP\n" + self.extra_conf
        )

    def _start_slurmdbd(self) -> None:
        # slurmdbd reads slurmdbd.conf beside $SLURM_CONF
        self._spawn("slurmdbd", ["slurmdbd", "-D"])

        def up() -> bool:
            self._alive("slurmdbd")
            with socket.create_connection(("127.0.0.1", self.dbd_port), timeout=1):
                return True

        wait_for("slurmdbd", up, 120, self.workdir / "log" / "slurmdbd.log")

    def _start_slurmctld(self) -> None:
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        wait_for(
            "slurmctld",
            lambda: self._alive("slurmctld") and self.run(["scontrol", "ping"], check=False).stdout.count("UP") >= 1,
            120,
            self.workdir / "log" / "slurmctld.log",
        )

    def _start_slurmd(self) -> None:
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf)])

        def idle() -> bool:
            self._alive("slurmd")
            out = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False).stdout
            return "idle" in out

        wait_for("slurmd", idle, 120, self.workdir / "log" / "slurmd.log")

    # ---- clients ----------------------------------------------------------------------------
    def run(
        self, argv: list[str], check: bool = True, timeout: float = 300, env: dict[str, str] | None = None, **kw
    ) -> subprocess.CompletedProcess:
        e = dict(self.env)
        if env:
            e.update(env)
        r = subprocess.run(
            self.root.argv(argv, cwd=kw.pop("cwd", None)), env=e, capture_output=True, text=True, timeout=timeout, **kw
        )
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        return r

    def wait_accounted(self, job_id: str, timeout: float = 120) -> dict:
        """Wait until slurmdbd has the job in a final state and a time-window query, as the
        ingest asks, lists it too; returns its sacct --json entry.

        A window can leave out for a while a job that `sacct -j` already shows finished (seen for
        an array's tasks on Slurm 24.11 under load): a test ingesting straight after must wait
        for both, as a site's next run picks such a job up through the watermark's overlap."""

        def finished(out: str) -> dict | None:
            for job in json.loads(out).get("jobs", []):
                state = job.get("state", {})
                current = state.get("current") if isinstance(state, dict) else state
                if isinstance(current, list):
                    current = current[0] if current else ""
                if str(job.get("job_id")) == job_id and current not in ("PENDING", "RUNNING", None):
                    if all(s.get("time", {}).get("end") for s in job.get("steps", [])):
                        return job
            return None

        def done() -> dict | None:
            # the window is asked in the ingest's own form (JSON, all users), and must show the
            # job finished with its steps ended too, not merely list it
            views = (["-j", job_id], ["--allusers", "--starttime", "now-1days", "--endtime", "now"])
            found = None
            for selection in views:
                r = self.run(["sacct", "--json", *selection], check=False)
                if r.returncode != 0 or not (found := finished(r.stdout)):
                    return None
            return found

        return wait_for(
            f"accounting of job {job_id}", done, timeout, self.workdir / "log" / "slurmdbd.log", interval=1.0
        )

    @staticmethod
    def available(root: HostRoot = HOST) -> str | None:
        """Why a local cluster cannot start here, or None when it can."""
        if os.geteuid() != 0:
            return "needs root"
        missing = [
            b
            for b in (
                "munged",
                "mariadbd",
                "mariadb-install-db",
                "slurmdbd",
                "slurmctld",
                "slurmd",
                "srun",
                "sbatch",
                "sacct",
            )
            if not root.which(b)
        ]
        return f"missing {', '.join(missing)}" if missing else None


def wait_array(cluster: LocalCluster, array_id: str, n: int) -> list[str]:
    """Raw job ids of an array's tasks (by task id), once slurmdbd has them all finished."""

    def done():
        r = cluster.run(["sacct", "-X", "-P", "-n", "-j", array_id, "-o", "JobIDRaw,JobID,State"], check=False)
        rows = [line.split("|") for line in r.stdout.split()]
        if len(rows) == n and all(s not in ("PENDING", "RUNNING") for _, _, s in rows):
            return [raw for raw, _, _ in sorted(rows, key=lambda x: int(x[1].split("_")[1]))]
        return None

    tasks = wait_for(f"array {array_id}", done, 120, interval=1.0)
    for t in tasks:
        cluster.wait_accounted(t)
    return tasks
