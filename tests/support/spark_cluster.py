"""A throw-away Spark standalone cluster with its Thrift server, on loopback, from pyspark's own jars.

One master, workers of one core each, and the Spark Thrift Server (HiveThriftServer2, the
JDBC/ODBC endpoint dbt-spark's thrift method talks to) as the cluster's one application: each a
JVM of its own, started with the wheel's bin/spark-class and bin/spark-submit, every port picked
free on 127.0.0.1. The Hive metastore is embedded Derby and the tables' warehouse folder both live
under ``root``, so a Thrift server started again on the same root finds every table the last one
built. deploy/spark/README.md, "A standalone cluster", gives the same commands for a site.

Each JVM runs in a process group of its own (a worker's executors are its children, in its
group): ``kill_worker`` takes a worker with its executors down as a lost machine would, and
``stop()`` ends every group it started and checks that no process of them is left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.processes import free_port

#: Bounds of the waits for a JVM to come up: a JVM on a loaded two-core machine takes 10-30 s.
START_SECONDS = 180.0
STOP_SECONDS = 30.0


def spark_home() -> Path:
    """The pyspark wheel's folder: it holds bin/spark-class, bin/spark-submit and jars/ as a Spark
    distribution does (the standalone Master, Worker and the Thrift server's jar among them)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Daemon:
    """One JVM the cluster started: its process (the leader of its own process group) and log."""

    name: str
    proc: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None


def _group_members(pgid: int) -> list[int]:
    """The processes still in process group ``pgid`` (from /proc: no process is left out by name)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the fields after the command's ")" are: state ppid pgrp ...
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def stop_group(daemon: Daemon, sig: int = signal.SIGTERM, timeout: float = STOP_SECONDS) -> None:
    """End a daemon's whole process group: ``sig``, then SIGKILL after ``timeout``; raise if any
    process of the group outlives that."""
    pgid = daemon.proc.pid
    for s in (sig, signal.SIGKILL):
        try:
            os.killpg(pgid, s)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (daemon.alive() or _group_members(pgid)):
            time.sleep(0.2)
        if not daemon.alive() and not _group_members(pgid):
            break
    daemon.proc.wait(timeout=timeout)
    left = _group_members(pgid)
    if left:
        raise RuntimeError(f"{daemon.name}: processes {left} of its group outlived SIGKILL")


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class WorkerLoss:
    """A worker killed while its executor ran tasks: which, how many tasks it held, when (seconds
    after the watch began)."""

    worker: int | None = None
    executor: str | None = None
    active_tasks: int = 0
    at_seconds: float = 0.0


@dataclass
class SparkCluster:
    """A standalone master, ``workers`` workers and the Thrift server, all under ``root``."""

    root: Path
    workers: int = 2
    #: What each worker offers (one core, memory for one executor) and what the executors take.
    worker_memory: str = "1g"
    executor_memory: str = "768m"
    #: The Thrift server's JVM: the Spark driver, the metastore and the query planner.
    driver_memory: str = "1g"
    #: The Master and Worker daemons themselves (Spark's default is 1g each).
    daemon_memory: str = "256m"
    shuffle_partitions: int = 4
    #: Every JVM's options: on a small host, JIT compilation by C1 only and the serial collector.
    #: Each of the cluster's JVMs (and each new executor) compiles the same Spark code again, and
    #: on two cores C2's compiler threads and the parallel collector's threads took the CPU the
    #: builds and the other tests needed; on queries over a day of one site C2's faster code does
    #: not pay for its compiling. A site's cluster keeps the JVM defaults.
    jvm_options: str = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    thrift_port: int = field(default_factory=free_port)
    master: Daemon | None = None
    worker_daemons: dict[int, Daemon] = field(default_factory=dict)
    thrift: Daemon | None = None
    ui_port: int = 0
    _started: int = 0

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def warehouse(self) -> Path:
        """spark.sql.warehouse.dir: the built tables, <schema>.db/<table>/ as Parquet."""
        return self.root / "warehouse"

    @property
    def metastore(self) -> Path:
        """The Hive metastore's Derby database (its derby.log beside it, in root)."""
        return self.root / "metastore_db"

    def _env(self) -> dict[str, str]:
        home = spark_home()
        env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
        env["SPARK_DAEMON_MEMORY"] = self.daemon_memory
        env["SPARK_DAEMON_JAVA_OPTS"] = self.jvm_options
        # no spark-defaults.conf or spark-env.sh of the machine's: the cluster is what is written here
        env["SPARK_CONF_DIR"] = str(self.root / "conf")
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Daemon:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        (self.root / "conf").mkdir(exist_ok=True)
        self._started += 1
        log = self.root / "logs" / f"{self._started:02d}-{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                env=env or self._env(),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return Daemon(name, proc, log)

    def _wait(self, daemon: Daemon, what: str, ready: Callable[[], object]) -> None:
        """Poll ``ready`` until true, at most START_SECONDS; a daemon that exits or never gets
        ready fails with the end of its log."""
        deadline = time.monotonic() + START_SECONDS
        last: object = None
        while daemon.alive() and time.monotonic() < deadline:
            try:
                if ready():
                    return
            except OSError as e:  # not listening yet: keep polling, report the last error
                last = e
            time.sleep(0.5)
        state = f"exited {daemon.proc.returncode}" if not daemon.alive() else f"not ready after {START_SECONDS:.0f} s"
        tail = "\n".join(daemon.log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"{what}: {state} (last: {last!r}); {daemon.log} ends:\n{tail}")

    # ---- the commands deploy/spark/README.md gives -------------------------------------------

    def master_argv(self) -> list[str]:
        return [
            str(spark_home() / "bin" / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.master_port),
            "--webui-port",
            str(self.master_ui_port),
        ]

    def worker_argv(self, n: int) -> list[str]:
        return [
            str(spark_home() / "bin" / "spark-class"),
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--cores",
            "1",
            "--memory",
            self.worker_memory,
            "--work-dir",
            str(self.root / f"worker-{n}"),
            "--webui-port",
            "0",
            self.master_url,
        ]

    def thrift_argv(self) -> list[str]:
        tmp = self.root / "tmp"
        conf = {
            "spark.cores.max": str(self.workers),
            "spark.executor.cores": "1",
            "spark.executor.memory": self.executor_memory,
            "spark.sql.warehouse.dir": str(self.warehouse),
            "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={self.metastore};create=true",
            # Derby's log and Hive's scratch and operation-log folders in root, not the working
            # directory or /tmp/<user> (shared with whatever else runs there)
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.root} -Djava.io.tmpdir={tmp} {self.jvm_options}",
            "spark.executor.extraJavaOptions": self.jvm_options,
            # A Spark TIMESTAMP is an instant shown in the session zone: UTC cuts days and hours
            # as DuckDB's timezone('UTC', ...) does (the profile sets it per session too).
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
            # The application's UI for its REST API only (executors and their tasks, which a
            # test reads to kill a worker while it runs tasks), on loopback like the rest
            "spark.ui.port": str(self.ui_port),
            "spark.ui.showConsoleProgress": "false",
            # Each statement answered when it is done. dbt-spark runs a statement and then polls
            # its state every poll_interval, a whole number of seconds: with the server's default
            # (asynchronous) every statement of a build waited for a poll, 60 s of a 250 s build
            # here. Synchronous needs nothing between dbt and the server that drops a connection
            # idle for the length of the longest statement (deploy/spark/README.md).
            "spark.sql.hive.thriftServer.async": "false",
        }
        argv = [
            str(spark_home() / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--name",
            "tierlens-thrift",
            "--master",
            self.master_url,
            "--driver-memory",
            self.driver_memory,
        ]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv += [
            "spark-internal",
            "--hiveconf",
            "hive.server2.thrift.bind.host=127.0.0.1",
            "--hiveconf",
            f"hive.server2.thrift.port={self.thrift_port}",
        ]
        return argv

    # ---- life cycle --------------------------------------------------------------------------

    def start(self) -> SparkCluster:
        """The master, then the workers and the Thrift server at once (each JVM takes its 10-30 s
        to start: in parallel they take it once)."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        self.master = self._spawn("master", self.master_argv())
        self._wait(self.master, "Spark master", lambda: _port_open(self.master_port) and self.master_state())
        for n in range(1, self.workers + 1):
            self._spawn_worker(n)
        self.start_thrift()
        for n, daemon in self.worker_daemons.items():
            self._wait(daemon, f"Spark worker {n}", lambda: self.alive_workers() == self.workers)
        return self

    def _spawn_worker(self, n: int) -> Daemon:
        (self.root / f"worker-{n}").mkdir(parents=True, exist_ok=True)
        # the executors' shuffle and spill files, in the worker's folder rather than /tmp
        env = self._env() | {"SPARK_LOCAL_DIRS": str(self.root / f"worker-{n}" / "local")}
        self.worker_daemons[n] = self._spawn(f"worker-{n}", self.worker_argv(n), env)
        return self.worker_daemons[n]

    def start_worker(self, n: int) -> None:
        """Worker ``n`` again (after kill_worker): the master counts it alive before this returns."""
        alive_before = self.alive_workers()
        daemon = self._spawn_worker(n)
        self._wait(daemon, f"Spark worker {n}", lambda: self.alive_workers() > alive_before)

    def kill_worker(self, n: int) -> None:
        """Worker ``n`` and its executors killed at once (SIGKILL), as when its machine is lost."""
        stop_group(self.worker_daemons.pop(n), signal.SIGKILL)

    def lose_a_busy_worker(self, done: threading.Event, after: float) -> WorkerLoss:
        """Once ``after`` seconds have passed and until ``done`` is set: SIGKILL the worker of the
        first executor seen running tasks, as a lost machine, then start that worker again as the
        machine coming back. Returns what was lost (nothing if no executor was busy in time)."""
        started = time.monotonic()
        done.wait(after)
        while not done.is_set():
            busy = [e for e in self.executors() if e["isActive"] and e["activeTasks"] > 0]
            if busy:
                n = self.worker_of_executor(busy[0]["id"])
                self.kill_worker(n)
                loss = WorkerLoss(n, busy[0]["id"], busy[0]["activeTasks"], time.monotonic() - started)
                self.start_worker(n)
                return loss
            done.wait(0.5)
        return WorkerLoss()

    def start_thrift(self) -> None:
        """The Thrift server, ready for connections once its application holds an executor."""
        # Spark's launcher sizes the Thrift server's JVM by SPARK_DAEMON_MEMORY, before
        # --driver-memory (it counts the server as a daemon): both say the same here
        env = self._env() | {"SPARK_DAEMON_MEMORY": self.driver_memory}
        self.ui_port = free_port()
        self.thrift = self._spawn("thrift", self.thrift_argv(), env)
        self._wait(self.thrift, "Spark Thrift server", lambda: _port_open(self.thrift_port))
        self._wait(self.thrift, "the Thrift server's executors", lambda: self.running_executors() >= 1)

    def stop_thrift(self) -> None:
        if self.thrift is not None:
            stop_group(self.thrift)
            self.thrift = None

    def stop(self) -> None:
        """Every JVM this cluster started, application first; raises if a process is left."""
        daemons = [d for d in (self.thrift, *self.worker_daemons.values(), self.master) if d is not None]
        self.thrift, self.worker_daemons, self.master = None, {}, None
        errors = []
        for daemon in daemons:
            try:
                stop_group(daemon)
            except Exception as e:  # noqa: BLE001 - stop the others, then report
                errors.append(f"{daemon.name}: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))

    # ---- what the master says ----------------------------------------------------------------

    def master_state(self) -> dict:
        """The master's own view (its web UI's /json/): workers with their state, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui_port}/json/", timeout=5) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        return sum(1 for w in self.master_state().get("workers", []) if w["state"] == "ALIVE")

    def running_executors(self) -> int:
        """Cores the running application holds (one per executor here)."""
        return sum(a.get("cores", 0) for a in self.master_state().get("activeapps", []))

    def executors(self) -> list[dict]:
        """The Thrift server application's executors as its REST API gives them (id, hostPort,
        activeTasks, isActive, removeReason, ...), the ones removed included."""
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=30) as r:
            app = json.loads(r.read())[0]["id"]
        with urllib.request.urlopen(f"{base}/{app}/allexecutors", timeout=30) as r:
            return [e for e in json.loads(r.read()) if e["id"] != "driver"]

    def worker_of_executor(self, executor_id: str) -> int:
        """The worker whose process group holds executor ``executor_id`` (its JVM is the worker's child)."""
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                pgid = os.getpgid(int(cmdline.parent.name))
            except OSError:
                continue
            if b"--executor-id" in argv and argv[argv.index(b"--executor-id") + 1] == executor_id.encode():
                for n, daemon in self.worker_daemons.items():
                    if daemon.proc.pid == pgid:
                        return n
        raise LookupError(f"no worker of this cluster runs executor {executor_id}")

    def thrift_env(self) -> dict[str, str]:
        """The environment dbt's spark_thrift target (dbt/profiles.yml) reads to reach this server."""
        return {"TIERLENS_SPARK_HOST": "127.0.0.1", "TIERLENS_SPARK_PORT": str(self.thrift_port)}


@pytest.fixture(scope="module")
def starting_spark_cluster(tmp_path_factory) -> Iterator[tuple[SparkCluster, Future]]:
    """A cluster starting on a thread of its own, so that a module's other set-up runs while its
    JVMs come up (``future.result()`` waits for it and raises what the start raised); stopped
    (every JVM, checked) after the module's last test."""
    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    with ThreadPoolExecutor(1, thread_name_prefix="spark-cluster") as pool:
        future = pool.submit(cluster.start)
        try:
            yield cluster, future
        finally:
            future.exception()  # a start still under way ends before its JVMs are stopped
            cluster.stop()
