"""`tierlens ingest condor` on hand-made history files in HTCondor's real format.

The fixtures below are a rotated file and the live ``history`` of one schedd: quoted and escaped
values, a value with an escaped line break, a list, a nested ad, unicode, an evicted-and-restarted
job, a job without tags, a removed job, an expression-valued RequestCpus and damaged ads. Every
expected number is written out here from the fixture's literals, not taken from the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

classad2 = pytest.importorskip("classad2")

from tierlens.cli import app  # noqa: E402
from tierlens.records import job_identity  # noqa: E402
from tierlens.sources.condor.history import history_batches, history_files, split_ads  # noqa: E402
from tierlens.sources.condor.schedd import ScheddHistory, Watermark  # noqa: E402

T = 1794816000  # Mon 2026-11-16 08:00:00 UTC
CLUSTER = "t2test"
SCHEDD = "ap01.t2.example.org"


def gjid(cluster_id: int, qdate: int) -> str:
    return f"{SCHEDD}#{cluster_id}.0#{qdate}"


def ident(cluster_id: int, qdate: int) -> str:
    return f"htcondor.{CLUSTER}.{gjid(cluster_id, qdate)}"


def tags(storage, devices, arm, route="direct", path="/var/lib/condor/execute"):
    devs = ", ".join(f'"{d}"' for d in devices)
    return (
        f'MachineAttrTierlensStorageType0 = "{storage}"\n'
        f"MachineAttrTierlensScratchDevices0 = {{ {devs} }}\n"
        f'MachineAttrTierlensScratchPath0 = "{path}"\n'
        f'MachineAttrTierlensAbArm0 = "{arm}"\n'
        f'MachineAttrTierlensCacheRoute0 = "{route}"\n'
        f"MachineAttrTierlensNodeSlots0 = 64\n"
    )


def common(cid, qdate, owner="alice", group="group_atlas.prod.alice", with_identity=True):
    s = (
        f'GlobalJobId = "{gjid(cid, qdate)}"\nClusterId = {cid}\nProcId = 0\nOwner = "{owner}"\n'
        f'AccountingGroup = "{group}"\nQDate = {qdate}\nJobUniverse = 5\n'
    )
    if with_identity:
        s += (
            f'TierlensCluster = "{CLUSTER}"\nTierlensJobIdentity = "{ident(cid, qdate)}"\n'
            f'Environment = "XRD_MONINFO={ident(cid, qdate)} FOO=1"\n'
        )
    return s


def finished(start, wall, user, sys_, cores=1, exit_code=0, provisioned=True):
    """The lines of a job that ran once, from start for wall seconds, and completed."""
    s = (
        f"JobStatus = 4\nExitCode = {exit_code}\nJobStartDate = {start}\nJobCurrentStartDate = {start}\n"
        f"CompletionDate = {start + wall}\nRequestCpus = {cores}\nRemoteUserCpu = {user:.1f}\n"
        f"RemoteSysCpu = {sys_:.1f}\nRemoteWallClockTime = {wall:.1f}\nCommittedTime = {wall}\n"
    )
    return s + (f"CpusProvisioned = {cores}\n" if provisioned else "")


AD_A = (
    common(101, T - 600)
    + finished(T, 4000, 3000, 200)
    + """ExitBySignal = false
NumJobStarts = 1
LastRemoteWallClockTime = 4000.0
BlockReadKbytes = 2048
BlockWriteKbytes = 1024
LastRemoteHost = "slot1_1@wn-ssd01.t2.example.org"
"""
    + tags("ssd", ["Samsung SSD 870 EVO 1TB"], "A")
)

AD_B = (
    common(102, T - 500, owner="bob", group="group_atlas.analysis.bob")
    + finished(T + 100, 3600, 20000, 880, cores=8)
    + """NumJobStarts = 1
JobBatchName = "Grüße – ανάλυση ✓"
Arguments = "-c 'print(\\"hello world\\")' --flag"
SubmitEventNotes = "line one\\nline two"
TransferInputStats = [ CedarFilesCount = 2; CedarSizeBytes = 123456 ]
ProvisionedResources = "Cpus Disk Memory"
LastRemoteHost = "slot1_2@wn-hdd01.t2.example.org"
"""
    + tags("hdd", ["ST4000NM0035-1V4107"], "B", route="cache:xcache01:1094")
)

# Evicted after 1000 s on an HDD node, restarted, completed after 5000 s on a RAID0 node.
AD_C = (
    common(103, T - 1000)
    + f"""JobStatus = 4
ExitCode = 0
JobStartDate = {T + 200}
JobCurrentStartDate = {T + 1200}
CompletionDate = {T + 6200}
NumJobStarts = 2
JobRunCount = 2
RequestCpus = 1
CpusProvisioned = 1
RemoteUserCpu = 4500.0
RemoteSysCpu = 100.0
CumulativeRemoteUserCpu = 5300.0
CumulativeRemoteSysCpu = 150.0
RemoteWallClockTime = 6000.0
CommittedTime = 5000
LastRemoteWallClockTime = 5000.0
LastRemoteHost = "slot1_4@wn-r0-01.t2.example.org"
MachineAttrTierlensStorageType1 = "hdd"
MachineAttrTierlensAbArm1 = "A"
"""
    + tags("raid0", ["ST2000NM0055-1V4104", "WDC WD2003FZEX-00SRLA0"], "B")
)

# Submitted before tierlens was deployed: no identity, no tags.
AD_D = (
    common(104, T - 300, owner="carol", group="group_cms.carol", with_identity=False)
    + finished(T + 300, 2000, 1000, 0, provisioned=False)
    + """LastRemoteHost = "slot1_1@wn-old01.t2.example.org"
"""
)

# RequestCpus is an expression (2 here); no CpusProvisioned.
AD_E = (
    common(105, T - 200)
    + f"""JobStatus = 4
ExitCode = 0
JobCurrentStartDate = {T + 400}
JobStartDate = {T + 400}
CompletionDate = {T + 2200}
MachineAttrCpus0 = 2
RequestCpus = ifThenElse(MachineAttrCpus0 > 4, 4, 2)
RemoteUserCpu = 3000.0
RemoteSysCpu = 240.0
RemoteWallClockTime = 1800.0
CommittedTime = 1800
LastRemoteHost = "slot1_7@wn-nvme01.t2.example.org"
"""
    + tags("nvme", ["SAMSUNG MZQL23T8HCLS-00A07"], "B")
)

AD_BAD_EXPR = (
    common(106, T - 100)
    + """JobStatus = 4
RemoteUserCpu = 12 +
RemoteSysCpu = 1.0
"""
)

AD_GARBAGE = """ClusterId = 110
this line is not an attribute \x01\x02
ProcId = 0
"""

# Removed after it had run 1000 s.
AD_F = (
    common(107, T - 100)
    + f"""JobStatus = 3
JobCurrentStartDate = {T + 500}
JobStartDate = {T + 500}
CompletionDate = 0
EnteredCurrentStatus = {T + 1500}
RequestCpus = 1
RemoteUserCpu = 100.0
RemoteSysCpu = 0.0
RemoteWallClockTime = 1000.0
CommittedTime = 1000
LastRemoteHost = "slot1_3@wn-ssd01.t2.example.org"
"""
    + tags("ssd", ["Samsung SSD 870 EVO 1TB"], "A")
)

AD_G = (
    common(108, T - 50, owner="bob", group="group_atlas.analysis.bob")
    + finished(T + 600, 1000, 900, 50, exit_code=1, provisioned=False)
    + """LastRemoteHost = "slot1_5@wn-hdd01.t2.example.org"
"""
    + tags("hdd", ["ST4000NM0035-1V4107"], "B", route="cache:xcache01:1094")
)

AD_NO_GJID = """ClusterId = 109
ProcId = 0
Owner = "dave"
JobStatus = 4
"""

# cluster id, owner, cpu user, cpu sys, wall of the last run, cores, storage type, arm
EXPECTED = {
    101: ("alice", 3000.0, 200.0, 4000.0, 1, "ssd", "A"),
    102: ("bob", 20000.0, 880.0, 3600.0, 8, "hdd", "B"),
    103: ("alice", 4500.0, 100.0, 5000.0, 1, "raid0", "B"),
    104: ("carol", 1000.0, 0.0, 2000.0, 1, None, None),
    105: ("alice", 3000.0, 240.0, 1800.0, 2, "nvme", "B"),
    107: ("alice", 100.0, 0.0, 1000.0, 1, "ssd", "A"),
    108: ("bob", 900.0, 50.0, 1000.0, 1, "hdd", "B"),
}
QDATES = {101: T - 600, 102: T - 500, 103: T - 1000, 104: T - 300, 105: T - 200, 107: T - 100, 108: T - 50}


def history_text(ads: list[str]) -> bytes:
    """Ads as the schedd writes them: each followed by its '*** Offset = …' banner."""
    out = b""
    for ad in ads:
        offset = len(out)
        cid = re.search(r"^ClusterId = (\d+)", ad, re.M).group(1)
        owner = (re.search(r'^Owner = "([^"]*)"', ad, re.M) or [None, ""])[1]
        done = (re.search(r"^CompletionDate = (\d+)", ad, re.M) or [None, "0"])[1]
        out += ad.encode("utf-8")
        out += (
            f'*** Offset = {offset} ClusterId = {cid} ProcId = 0 Owner = "{owner}" CompletionDate = {done}\n'
        ).encode()
    return out


@pytest.fixture
def spool(tmp_path) -> Path:
    d = tmp_path / "spool"
    d.mkdir()
    (d / "history.20261116T120000").write_bytes(history_text([AD_A, AD_B, AD_C]))
    (d / "history").write_bytes(history_text([AD_D, AD_E, AD_BAD_EXPR, AD_GARBAGE, AD_F, AD_G, AD_NO_GJID]))
    (d / "job_queue.log").write_text("not history\n")
    return d


def load(spool: Path, warehouse: Path, *extra: str):
    result = CliRunner().invoke(
        app, ["ingest", "condor", str(spool), "--cluster", CLUSTER, "-w", str(warehouse), *extra]
    )
    assert result.exit_code == 0, result.output
    return result


def q(warehouse: Path, sql: str, *params):
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------------------ splitting


def test_files_and_order(spool):
    names = [p.name for p in history_files([spool])]
    assert names == ["history.20261116T120000", "history"]


def test_split_on_banners_keeps_every_ad_and_its_offset(spool):
    data = (spool / "history").read_bytes()
    ads = list(split_ads(spool / "history"))
    assert len(ads) == 7
    firsts = [
        f'GlobalJobId = "{gjid(104, T - 300)}"',
        f'GlobalJobId = "{gjid(105, T - 200)}"',
        f'GlobalJobId = "{gjid(106, T - 100)}"',
        "ClusterId = 110",
        f'GlobalJobId = "{gjid(107, T - 100)}"',
        f'GlobalJobId = "{gjid(108, T - 50)}"',
        "ClusterId = 109",
    ]
    for raw, first_line in zip(ads, firsts):
        assert data[raw.offset :].startswith(first_line.encode()), (raw.offset, first_line)
        assert raw.text.startswith(first_line)
    # the banner's own Offset field agrees with the split
    banners = [int(m) for m in re.findall(rb"^\*\*\* Offset = (\d+)", data, re.M)]
    assert banners == [raw.offset for raw in ads]
    # parseAds on the unsplit text merges ads across the banners: the reason to split
    merged = list(classad2.parseAds(data.decode("utf-8", "replace")))
    assert len(merged) < 7


# ------------------------------------------------------------------------------ rows


def _rows(spool):
    jobs, tags_, rejects = [], [], []
    for b in history_batches([spool], CLUSTER):
        rows = b.table.to_pylist()
        (jobs if b.kind.value == "job" else tags_).extend(rows)
        rejects.extend(b.rejects)
    return jobs, tags_, rejects


def test_job_rows(spool):
    jobs, tags_, rejects = _rows(spool)
    by_id = {r["job_id"]: r for r in jobs}
    assert len(jobs) == 7
    for cid, (owner, user, sys_, wall, cores, _storage, _arm) in EXPECTED.items():
        r = by_id[gjid(cid, QDATES[cid])]
        assert r["batch_system"] == "htcondor" and r["cluster"] == CLUSTER and r["step_id"] == ""
        assert r["user_name"] == owner
        assert r["cpu_user_seconds"] == user and r["cpu_system_seconds"] == sys_
        assert r["wall_seconds"] == wall
        assert r["allocated_cores"] == cores
        assert r["job_identity"] == ident(cid, QDATES[cid])
    a = by_id[gjid(101, QDATES[101])]
    assert a["node"] == "wn-ssd01.t2.example.org"
    assert a["account"] == "group_atlas.prod.alice"
    assert a["bytes_read"] == 2048 * 1024 and a["bytes_written"] == 1024 * 1024
    assert a["state"] == "COMPLETED" and a["exit_code"] == 0
    assert a["start_time"].timestamp() == T and a["end_time"].timestamp() == T + 4000
    assert a["submit_time"].timestamp() == T - 600
    c = by_id[gjid(103, QDATES[103])]  # the restarted job: its last run
    assert c["start_time"].timestamp() == T + 1200 and c["end_time"].timestamp() == T + 6200
    assert c["node"] == "wn-r0-01.t2.example.org"
    f = by_id[gjid(107, QDATES[107])]
    assert f["state"] == "CANCELLED" and f["end_time"].timestamp() == T + 1500
    assert by_id[gjid(108, QDATES[108])]["state"] == "FAILED"
    assert by_id[gjid(108, QDATES[108])]["exit_code"] == 1


def test_tag_rows(spool):
    _, tags_, _ = _rows(spool)
    by_id = {r["job_id"]: r for r in tags_}
    assert set(by_id) == {gjid(c, QDATES[c]) for c, e in EXPECTED.items() if e[5]}
    for cid, e in EXPECTED.items():
        if e[5]:
            r = by_id[gjid(cid, QDATES[cid])]
            assert (r["storage_type"], r["ab_arm"]) == (e[5], e[6])
            assert r["tagger"] == "htcondor-startd-cron"
    c = by_id[gjid(103, QDATES[103])]
    assert c["device_models"] == ["ST2000NM0055-1V4104", "WDC WD2003FZEX-00SRLA0"]
    assert c["node"] == "wn-r0-01.t2.example.org"
    assert c["tagged_at"].timestamp() == T + 1200
    b = by_id[gjid(102, QDATES[102])]
    assert b["cache_route"] == "cache:xcache01:1094"
    assert b["scratch_path"] == "/var/lib/condor/execute"


def test_malformed_ads_are_rejected_with_file_and_offset(spool):
    _, _, rejects = _rows(spool)
    data = (spool / "history").read_bytes()
    where = {r.location: r for r in rejects}
    bad_expr = data.index(f'GlobalJobId = "{gjid(106, T - 100)}"'.encode())
    garbage = data.index(b"ClusterId = 110")
    no_gjid = data.index(b"ClusterId = 109")
    assert set(where) == {f"{spool / 'history'}:offset {o}" for o in (bad_expr, garbage, no_gjid)}
    assert "RemoteUserCpu" in where[f"{spool / 'history'}:offset {bad_expr}"].reason
    assert where[f"{spool / 'history'}:offset {no_gjid}"].field == "GlobalJobId"
    assert all(r.kind.value == "job" for r in rejects)


def test_batches_are_bounded(spool):
    batches = list(history_batches([spool], CLUSTER, batch_ads=2))
    assert all(b.table.num_rows + len(b.rejects) <= 2 for b in batches)
    assert sum(b.table.num_rows for b in batches if b.kind.value == "job") == 7
    assert sum(len(b.rejects) for b in batches) == 3


def test_per_job_history_file_without_banner(tmp_path):
    f = tmp_path / f"history.{gjid(101, T - 600)}"
    f.write_text(AD_A)
    jobs = [r for b in history_batches([f], CLUSTER) if b.kind.value == "job" for r in b.table.to_pylist()]
    assert [r["job_id"] for r in jobs] == [gjid(101, T - 600)]


def test_gzipped_rotated_file(tmp_path):
    import gzip

    f = tmp_path / "history.20261101T000000.gz"
    f.write_bytes(gzip.compress(history_text([AD_B])))
    jobs = [r for b in history_batches([f], CLUSTER) if b.kind.value == "job" for r in b.table.to_pylist()]
    assert [r["cpu_user_seconds"] for r in jobs] == [20000.0]


def test_identity_matches_what_the_config_gives_the_job(spool, tmp_path, monkeypatch):
    """The job row's identity is the XRD_MONINFO the shipped transform computes for that job."""
    htcondor2 = pytest.importorskip("htcondor2")
    from support.condor import CONF, apply

    cfg = tmp_path / "condor_config"
    cfg.write_text(f"TIERLENS_CLUSTER = {CLUSTER}\ninclude : {CONF}\n")  # set before: kept
    monkeypatch.setenv("CONDOR_CONFIG", str(cfg))
    htcondor2.reload_config()
    jobs, _, _ = _rows(spool)
    for r in jobs:
        job = classad2.ClassAd()
        job["GlobalJobId"] = r["job_id"]
        job["JobUniverse"] = 5
        apply(htcondor2.param, job)
        env = dict(tok.split("=", 1) for tok in job["Environment"].split())
        assert r["job_identity"] == env["XRD_MONINFO"] == job_identity("htcondor", CLUSTER, r["job_id"])


# ------------------------------------------------------------------------------ schedd path


class FakeSchedd:
    """Stands in for htcondor2.Schedd: history(since=…) returns the ads after ``since``, newest first."""

    def __init__(self, ads):
        self.ads = ads  # oldest first, as in the file
        self.calls = []

    def history(self, constraint=None, projection=(), match=-1, since=None):
        self.calls.append(since)
        out = []
        for ad in reversed(self.ads):
            if since is not None and f"{ad['ClusterId']}.{ad['ProcId']}" == since:
                break
            out.append(ad)
        return out


def test_schedd_history_with_watermark(tmp_path):
    ads = [classad2.parseOne(a) for a in (AD_A, AD_B, AD_C)]
    schedd = FakeSchedd(ads)
    mark = Watermark(tmp_path / "state" / "wm.json")
    first = ScheddHistory(schedd, mark, CLUSTER)
    jobs = [r for b in first.batches() if b.kind.value == "job" for r in b.table.to_pylist()]
    assert len(jobs) == 3 and first.since() is None  # not advanced before commit
    first.commit()
    assert first.since() == "103.0" and mark.read() == {"since": "103.0"}
    schedd.ads.append(classad2.parseOne(AD_G))
    second = ScheddHistory(schedd, mark, CLUSTER)
    jobs = [r for b in second.batches() if b.kind.value == "job" for r in b.table.to_pylist()]
    assert [r["job_id"] for r in jobs] == [gjid(108, QDATES[108])]
    assert schedd.calls == [None, "103.0"]
    second.commit()
    assert second.since() == "108.0"
    (tmp_path / "state" / "wm.json").write_text("garbage")
    assert second.since() is None and mark.read() == {}


# ------------------------------------------------------------------------------ warehouse and marts


def test_ingest_is_idempotent_and_counts_rejects(spool, tmp_path):
    wh = tmp_path / "wh.duckdb"
    out = load(spool, wh)
    assert "3 record(s) rejected" in " ".join(out.output.split())
    assert q(wh, "SELECT count(*) FROM raw_job")[0][0] == 7
    assert q(wh, "SELECT count(*) FROM raw_job_tag")[0][0] == 6
    rejects = q(wh, "SELECT location FROM raw_rejects ORDER BY location")
    assert len(rejects) == 3 and all(":offset " in r[0] for r in rejects)
    load(spool, wh)
    assert q(wh, "SELECT count(*) FROM raw_job")[0][0] == 7
    assert q(wh, "SELECT count(*) FROM raw_rejects")[0][0] == 3


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_history_to_marts_efficiency_by_storage_type(spool, tmp_path):
    from tierlens.transform import run_dbt

    wh = tmp_path / "wh.duckdb"
    load(spool, wh)
    result = run_dbt(wh, tmp_path / "dbt")
    assert result.success, result.failures

    # independently: Σ(user + sys) / Σ(wall x cores) per storage type, from EXPECTED's literals
    want: dict[str, list[float]] = {}
    for _owner, user, sys_, wall, cores, storage, _arm in EXPECTED.values():
        acc = want.setdefault(storage or "unknown", [0.0, 0.0])
        acc[0] += user + sys_
        acc[1] += wall * cores
    got = dict(
        q(
            wh,
            """
        SELECT storage_type, sum(cpu_hours) / sum(core_wall_hours)
        FROM marts.efficiency_by_group WHERE period_grain = 'day' GROUP BY storage_type""",
        )
    )
    assert set(got) == set(want)
    for storage, (cpu, core_wall) in want.items():
        assert got[storage] == pytest.approx(cpu / core_wall, rel=1e-9), storage
    # spelled out for two of them
    assert got["raid0"] == pytest.approx((4500 + 100) / 5000)  # last run only, not 4600/6000
    assert got["ssd"] == pytest.approx((3000 + 200 + 100) / (4000 + 1000))

    per_job = dict(q(wh, "SELECT job_id, efficiency FROM marts.job_efficiency"))
    for cid, (_owner, user, sys_, wall, cores, _storage, _arm) in EXPECTED.items():
        assert per_job[gjid(cid, QDATES[cid])] == pytest.approx((user + sys_) / (wall * cores))

    arms = dict(
        q(
            wh,
            """
        SELECT ab_arm, sum(cpu_hours) / sum(core_wall_hours)
        FROM marts.efficiency_by_group WHERE period_grain = 'day' GROUP BY ab_arm""",
        )
    )
    for arm in ("A", "B"):
        sel = [e for e in EXPECTED.values() if e[6] == arm]
        assert arms[arm] == pytest.approx(sum(e[1] + e[2] for e in sel) / sum(e[3] * e[4] for e in sel))


def test_cli_schedd_mode_advances_the_watermark(tmp_path, monkeypatch):
    """`tierlens ingest condor --schedd NAME` with a stand-in schedd: load, then only what is new."""
    import tierlens.sources.condor.schedd as schedd_mod

    schedd = FakeSchedd([classad2.parseOne(a) for a in (AD_A, AD_B)])
    monkeypatch.setattr(schedd_mod, "locate_schedd", lambda name=None, pool=None: schedd)
    wh = tmp_path / "wh.duckdb"
    for expected_jobs in (2, 3):
        result = CliRunner().invoke(app, ["ingest", "condor", "--schedd", "ap01", "--cluster", CLUSTER, "-w", str(wh)])
        assert result.exit_code == 0, result.output
        assert q(wh, "SELECT count(*) FROM raw_job")[0][0] == expected_jobs
        schedd.ads.append(classad2.parseOne(AD_C))
    assert schedd.calls[:2] == [None, "102.0"]
    marks = list((tmp_path / "tierlens-home" / "state").glob("condor-history-ap01.json"))
    assert len(marks) == 1 and Watermark(marks[0]).read() == {"since": "103.0"}


def test_cli_without_paths_or_schedd_says_what_to_do(tmp_path, monkeypatch):
    import tierlens.sources.condor.schedd as schedd_mod

    def unreachable(name=None, pool=None):
        raise RuntimeError("Unable to locate local daemon.")

    monkeypatch.setattr(schedd_mod, "locate_schedd", unreachable)
    result = CliRunner().invoke(app, ["ingest", "condor", "-w", str(tmp_path / "wh.duckdb")])
    assert result.exit_code == 1
    assert "give history files" in " ".join(result.output.split())


# ------------------------------------------------------------------------------ fast path


def _all(paths, fast: bool, batch_ads: int = 50_000):
    jobs, tags_, rejects = [], [], []
    for b in history_batches(paths, CLUSTER, fast=fast, batch_ads=batch_ads):
        assert b.table.num_rows + len(b.rejects) <= batch_ads
        (jobs if b.kind.value == "job" else tags_).extend(zip(b.table.to_pylist(), b.locations))
        rejects.extend((r.location, r.field, r.reason) for r in b.rejects)
    return jobs, tags_, sorted(rejects)


def _same_as_classad2(paths) -> int:
    fast, slow = _all(paths, True), _all(paths, False)
    assert fast[0] == slow[0] and fast[1] == slow[1] and fast[2] == slow[2]
    return len(fast[0])


def test_fast_path_rows_equal_classad2_on_the_fixtures(spool):
    assert _same_as_classad2([spool]) == 7


def _slow_ads(path: Path) -> list[int]:
    """The offsets of the ads the fast path hands to classad2."""
    from tierlens.sources.condor.fast import blocks, read_block
    from tierlens.sources.condor.history import NEEDED

    return [o for base, data in blocks(path) for o, _ in read_block(data, base, NEEDED).slow]


def test_fast_path_rows_equal_classad2_on_the_bench_file(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from condor_bench import write_history

    path = tmp_path / "history"
    write_history(path, 20_000)
    assert _same_as_classad2([path]) == 20_000
    assert _slow_ads(path) == []  # all took the fast path


def test_ad_rows_reads_only_the_needed_attributes(spool):
    from tierlens.sources.condor.history import NEEDED, ad_rows, parse_ad

    class Recording:
        def __init__(self, ad):
            self.ad, self.asked = ad, set()

        def __getitem__(self, name):
            self.asked.add(name)
            return self.ad[name]

        def eval(self, name):
            return self.ad.eval(name)

    asked = set()
    for raw in split_ads(spool / "history.20261116T120000"):
        rec = Recording(parse_ad(raw))
        ad_rows(rec, CLUSTER)
        asked |= rec.asked
    assert asked <= set(NEEDED) and "GlobalJobId" in asked and "MachineAttrTierlensScratchDevices0" in asked


@pytest.mark.parametrize(
    "line, fast",
    [
        ("RemoteUserCpu = 12.5", True),
        ("RemoteUserCpu = 1.25E+03", True),
        ('Owner = "al ice"', True),
        ('MachineAttrTierlensScratchDevices0 = { "a b", "c" }', True),
        ("ExitBySignal = FALSE", True),
        ('Owner = ""', True),  # empty: no user
        ('MachineAttrTierlensStorageType0 = ""', True),  # empty: no tag
        ("ExitCode = UNDEFINED", True),
        ("JobStatus = 2", False),  # twice: classad2 decides
        ("RequestCpus = ifThenElse(MachineAttrCpus0 > 4, 4, 2)", False),  # an expression
        ('Owner = "al\\"ice"', False),  # an escape
        ("RemoteSysCpu = -1", False),  # a sign is an operator
        ("RemoteSysCpu = 010", False),  # octal in ClassAds
        ('owner = "bob"', False),  # another spelling
        ("Requirements = (Memory > 1) &&", False),  # cut: unneeded but broken
        ("Requirements = ((Memory > 1)", False),  # unbalanced
        ("", False),  # a blank line
    ],
)
def test_fast_path_leaves_to_classad2_what_is_not_plain(tmp_path, line, fast):
    path = tmp_path / "history"
    path.write_text(f'GlobalJobId = "s#1.0#5"\nJobStatus = 4\n{line}\n*** Offset = 0\n')
    assert (_slow_ads(path) == []) == fast
    _same_as_classad2([path])  # and either way the row is classad2's


def _bench_ads(n: int) -> list[str]:
    """n ads of the bench's generator, each without its banner."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from condor_bench import _AD

    t0 = T
    return [
        _AD.format(cid=1000 + i, q=t0 + i - 600, start=t0 + i, end=t0 + i + 3600, slot=i, node=i, arm="AB"[i % 2])
        for i in range(n)
    ]


def _set(ad: str, name: str, value: str) -> str:
    """The ad with the value of its line for ``name`` replaced."""
    out, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", ad, flags=re.M)
    assert n == 1, name
    return out


def _damaged_file(tmp_path) -> tuple[Path, list[int]]:
    """A history file of bench ads, most of them damaged in one way; and each ad's offset."""
    ads = _bench_ads(16)
    ads[1] = _set(ads[1], "RequestCpus", "ifThenElse(MachineAttrCpus0 > 2, 3, 1)").replace(
        "CpusProvisioned = 4\n", ""
    )  # expression: 3
    ads[2] = _set(ads[2], "Owner", '"at\\"las"')  # escaped string
    ads[3] = ads[3] + "RemoteUserCpu = 777.5\n"  # duplicate: last wins
    ads[4] = ads[4].replace("ProcId = 0\n", "ProcId = 0\nthis is not an attribute\n")  # bad line
    ads[5] = ads[5][: ads[5].index('"LINUX"') + 3] + "\n"  # truncated mid-string
    ads[6] = _set(ads[6], "RemoteSysCpu", "12 +")  # cut expression
    ads[7] = _set(ads[7], "QDate", "1794815400.25")  # a real time
    ads[8] = _set(ads[8], "ExitBySignal", "TRUE")  # keyword, failed
    ads[9] = _set(ads[9], "MachineAttrTierlensStorageType0", '" NVMe "')  # spaces, case
    ads[10] = _set(ads[10], "TierlensJobIdentity", '"htcondor.other.some#1.0#2"')  # not its own
    ads[11] = _set(ads[11], "ExitCode", "-1")  # a sign: classad2
    ads[12] = ads[12].replace("GlobalJobId", "GlobalJobIdX")  # no GlobalJobId
    ads[13] = ads[13].replace('Owner = "atlas"', 'owner = "bob"')  # another spelling
    ads[14] = _set(ads[14], "RemoteUserCpu", "1.5e+03")  # exponent
    data = b""
    starts = []
    for i, ad in enumerate(ads):
        raw = ad.encode()
        if i == 15:
            raw = raw.replace(b'Iwd = "', b'Iwd = "\xff')  # not UTF-8
        starts.append(len(data))
        data += raw + f"*** Offset = {len(data)} ClusterId = {1000 + i}\n".encode()
        if i == 3:
            data += b"\n*** Offset = 0 ClusterId = 0\n"  # blank: no ad
    data += b'GlobalJobId = "tail#1.0#1"\nJobStatus = 4\nCmd = "/bin/tru'  # cut, no banner
    starts.append(data.rindex(b'GlobalJobId = "tail'))
    path = tmp_path / "history"
    path.write_bytes(data)
    return path, starts


def test_damaged_ads_give_classad2_rows_and_rejects_with_offsets(tmp_path):
    path, starts = _damaged_file(tmp_path)
    assert _same_as_classad2([path]) == 12
    jobs, _, rejects = _all([path], True)
    where = lambda i: f"{path}:offset {starts[i]}"  # noqa: E731
    assert {r[0] for r in rejects} == {where(i) for i in (4, 5, 6, 12, 16)}
    row = {loc: r for r, loc in jobs}
    assert row[where(1)]["allocated_cores"] == 3
    assert row[where(2)]["user_name"] == 'at"las'
    assert row[where(3)]["cpu_user_seconds"] == 777.5
    assert row[where(7)]["submit_time"].timestamp() == 1794815400.25
    assert row[where(8)]["state"] == "FAILED"
    assert row[where(10)]["job_identity"] == job_identity(
        "htcondor", "bench", "ap01.example.org#1010.0#" + str(T + 10 - 600)
    )
    assert row[where(11)]["exit_code"] == -1
    assert row[where(13)]["user_name"] == "bob"
    assert row[where(14)]["cpu_user_seconds"] == 1500.0
    _, tags_, _ = _all([path], True)
    assert [t["storage_type"] for t, loc in tags_ if loc == where(9)] == ["nvme"]
    # classad2 read the rejected ones and those whose needed values are not plain or not UTF-8
    assert _slow_ads(path) == [starts[i] for i in (1, 2, 3, 4, 5, 6, 11, 12, 13, 15, 16)]


def test_blocks_cut_anywhere_keep_every_ad_in_order(tmp_path, spool, monkeypatch):
    """Reads shorter than an ad and batches of 3 ads: the same rows, rejects and order."""
    from tierlens.sources.condor import fast

    monkeypatch.setattr(fast, "READ_BYTES", 1000)
    path, _ = _damaged_file(tmp_path)
    for paths in ([path], [spool]):
        assert _all(paths, True, batch_ads=3) == _all(paths, False, batch_ads=3)


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"*** Offset = 0\n",
        b"\n\n",
        b"A = 1\n\n*** x\n\n",
        b"A\n=\n = \n*** \n",
        b'GlobalJobId = "a#1.0#2"\nJobStatus = 4',  # no newline at the end
        b'GlobalJobId = "a#1.0#2"\r\nJobStatus = 4\r\n*** x\r\n',  # CRLF
    ],
)
def test_edge_files_as_classad2(tmp_path, text):
    path = tmp_path / "history"
    path.write_bytes(text)
    assert _all([path], True) == _all([path], False)


def test_randomly_damaged_ads_as_classad2(tmp_path):
    """Bytes inserted, deleted, lines cut short or repeated, anywhere in bench ads (seeded): the
    fast path gives classad2's rows and rejects, whichever of the two reads an ad."""
    import random

    rng = random.Random(17)
    alphabet = b'abcXYZ019 ="\\(){}[],.+-*\n\t\xff#'
    for trial in range(12):
        data = b""
        for i, ad in enumerate(_bench_ads(20)):
            raw = ad.encode()
            for _ in range(rng.randint(0, 3)):
                pos, op = rng.randrange(len(raw)), rng.random()
                if op < 0.4:
                    raw = raw[:pos] + bytes([rng.choice(alphabet)]) + raw[pos:]
                elif op < 0.7:
                    raw = raw[:pos] + raw[pos + rng.randint(1, 5) :]
                elif op < 0.85:
                    raw = raw[:pos] + b"\n"
                else:
                    lines = raw.split(b"\n")
                    lines.insert(rng.randrange(len(lines)), rng.choice(lines))
                    raw = b"\n".join(lines)
            data += raw + f"*** Offset = {len(data)} ClusterId = {1000 + i}\n".encode()
        path = tmp_path / f"history.{trial}"
        path.write_bytes(data)
        assert _all([path], True) == _all([path], False), trial


def _lines_by_hand(data: bytes, needed: tuple[str, ...]) -> dict[str, list]:
    """What fast._cut_lines should find per line, worked out one line at a time in Python."""
    from tierlens.sources.condor.fast import NAME

    out: dict[str, list] = {
        k: []
        for k in (
            "starts",
            "ends",
            "banner",
            "value_start",
            "value_end",
            "first",
            "last",
            "quoted",
            "bad",
            "backslashes",
            "needed",
            "pieces",
        )
    }
    lowered = [n.lower() for n in needed]
    pos = 0
    for line in data.split(b"\n")[:-1]:
        p = re.match(rb"[A-Za-z0-9_.]*", line).end()
        sep = p >= 1 and line[p : p + 3] == b" = "
        name = line[:p] if sep else b""
        value = line[p + 3 :] if sep else b""
        quoted = len(value) >= 2 and value[:1] == value[-1:] == b'"' and line.count(b'"') == 2
        text = name.decode()
        exact = needed.index(text) if text in needed else -1
        folded = lowered.index(text.lower()) if text.lower() in lowered else -1
        well_formed = re.fullmatch(NAME, text) is not None and exact == folded
        balanced = all(line.count(o) == line.count(c) for o, c in (b"()", b"[]", b"{}"))
        banner = line.startswith(b"*** ")
        cut = value[-1:] != b"" and value[-1:] in [bytes([c]) for c in b"-+*/%&|^<>=!?:,([{. \t\r"]
        vs = pos + p + 3 if sep else pos
        for key, v in (
            ("starts", pos),
            ("ends", pos + len(line)),
            ("banner", banner),
            ("value_start", vs),
            ("value_end", vs + len(value)),
            ("first", value[0] if value else 0),
            ("last", value[-1] if value else 0),
            ("quoted", quoted),
            ("backslashes", line.count(b"\\")),
            ("needed", exact),
            ("bad", not banner and (not (well_formed and value) or cut or not balanced or line.count(b'"') % 2 == 1)),
        ):
            out[key].append(v)
        q = int(quoted)
        out["pieces"] += [
            name,
            line[len(name) : p + 3 + q] if sep else b"",
            value[q : len(value) - q],
            (value[len(value) - q :] if sep else line) + b"\n",
        ]
        pos += len(line) + 1
    return out


@pytest.mark.parametrize("table_bits", [12, 3])  # 3: more names than the table takes, Arrow groups them
def test_compiled_line_scan_agrees_with_a_line_by_line_reading(monkeypatch, table_bits):
    """Random blocks of well-formed, damaged and banner lines: every per-line array of the
    compiled scan (and the name grouping) equals what reading each line by hand gives."""
    import random

    from tierlens.sources.condor import fast

    monkeypatch.setattr(fast, "_TABLE_BITS", table_bits)
    rng = random.Random(5)
    needed = ("GlobalJobId", "Owner", "RemoteUserCpu", "x.y")
    names = [
        *needed,
        "owner",
        "REMOTEUSERCPU",
        "Cmd",
        "a.b_c",
        "9abc",
        "_x",
        "Requirements",
        "AAAAAAAAsame",
        "BBBBBBBBsame",
        "SameHead.Ax",
        "SameHead.Bx",
    ]
    values = [
        '"atlas"',
        "12",
        "1.5e+03",
        "(A && B)",
        "((A)",
        '"a\\"b"',
        '{ "a", "b" }',
        "[ x = 1; ]",
        "",
        "12 +",
        '"',
        "true",
        "x]",
        '"a" "b"',
        "\udcff\udcfe",
        "{",
        "a\\b",
    ]
    junk = 'aA_.9 ="\\(){}[]*\t,+\udcff'
    for trial in range(20):
        lines = []
        for _ in range(rng.randint(0, 300)):
            r = rng.random()
            if r < 0.6:
                lines.append(f"{rng.choice(names)} = {rng.choice(values)}")
            elif r < 0.7:
                lines.append(f"*** Offset = {rng.randint(0, 99)}")
            elif r < 0.8:
                lines.append(f"N{rng.randint(0, 40)} = {rng.randint(0, 9)}")
            else:
                lines.append("".join(rng.choice(junk) for _ in range(rng.randint(0, 12))))
        data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") if lines else b"\n"
        got = fast._cut_lines(data, needed)
        want = _lines_by_hand(data, needed)
        for key, values_ in want.items():
            if key == "pieces":
                assert got.pieces.view(pa.binary()).to_pylist() == values_, trial
            else:
                of = got.scan if key in fast.LineScan._fields else got
                assert getattr(of, key).tolist() == values_, (trial, key)
        # every name hashed alike: the grouping rests on the byte comparison alone
        u = np.frombuffer(data, np.uint8)
        cuts = np.frombuffer(got.pieces.buffers()[1], np.int32)[: len(got.pieces) + 1]
        group, first = fast._group_pieces(
            u, fast._words(u), cuts[0:-1:4], cuts[1::4], np.zeros(len(got.starts), np.uint64), 12
        )
        names_ = want["pieces"][0::4]
        order = list(dict.fromkeys(names_))
        assert group.tolist() == [order.index(x) for x in names_], trial
        assert first.tolist() == [names_.index(x) for x in order], trial


def test_compiled_numbers_as_python_reads_them():
    """fast._numbers against the plain-number pattern and Python's float() (correctly rounded)
    on random number-like texts: which are numbers, and their values."""
    import random

    from tierlens.sources.condor import fast

    rng = random.Random(11)
    texts = [
        "0",
        "00",
        "010",
        "7",
        "1" * 18,
        "9" * 18,
        "1" * 19,
        "",
        "1.5",
        "-1",
        "+1",
        " 1",
        "1e3",
        "12a",
        "0.1",
        "1.",
        ".5",
        "1.5e+03",
        "1.25E-22",
        "1.25e-23",
        "9007199254740993.0",
        "1.0e100",
        "1.5e+",
        "123456789012345678.123456789",
        "0.30000000000000004",
        "2.2250738585072014e-08",
        "1.7e308",
    ]
    digits = lambda: "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 20)))  # noqa: E731
    for _ in range(3000):
        t = digits()
        if rng.random() < 0.7:
            t += "." + digits()
            if rng.random() < 0.5:
                t += rng.choice("eE") + rng.choice(["", "+", "-"]) + digits()[: rng.randint(0, 3)]
        if rng.random() < 0.05:
            t = t[: rng.randint(0, len(t))] + rng.choice(".x+") + t[rng.randint(0, len(t)) :]
        texts.append(t)
    data = "".join(texts).encode()
    lengths = np.array([len(t) for t in texts])
    kind, value = fast._numbers(np.frombuffer(data, np.uint8), np.cumsum(lengths) - lengths, np.cumsum(lengths))
    for t, k, v in zip(texts, kind.tolist(), value.tolist()):
        plain = re.fullmatch(fast._INT_OR_REAL.strip("^$"), t) is not None
        assert (k != fast.NO_NUMBER) == plain, t
        assert v == float(t) if k == fast.EXACT else np.isnan(v), t
    assert (kind == fast.EXACT).sum() > 500 and (kind == fast.TO_CAST).sum() > 100


def test_blocks_with_64_bit_positions_as_classad2(tmp_path, monkeypatch):
    """Blocks of 512 MiB or more take 64-bit positions (large strings); the compiled steps then
    run on int64 offsets: the same rows and rejects as classad2 (forced here on a small file)."""
    from tierlens.sources.condor import fast

    monkeypatch.setattr(fast, "_string_type", lambda data: (pa.LargeStringArray, np.int64))
    path, _ = _damaged_file(tmp_path)
    assert _same_as_classad2([path]) == 12


def test_scratch_device_lists_as_written(tmp_path):
    """String lists read on the fast path: each ad's devices as written, and as classad2 gives them."""
    lists = ["{}", '{ "" ,"x",\t"y z" }', '{ "sda" }', '{"a","b","c","d"}', '{ "ST2000NM0055-1V4104", "WDC" }']
    data = "".join(
        # a tagged ad names its node (one without goes to classad2, which rejects its tag)
        f'GlobalJobId = "s#{i}.0#5"\nJobStatus = 4\nLastRemoteHost = "slot1@wn1"\n'
        f'MachineAttrTierlensStorageType0 = "ssd"\nMachineAttrTierlensScratchDevices0 = {text}\n*** Offset = 0\n'
        for i, text in enumerate(lists)
    )
    path = tmp_path / "history"
    path.write_text(data)
    assert _slow_ads(path) == []
    _same_as_classad2([path])
    _, tags_, _ = _all([path], True)
    assert [t["device_models"] for t, _ in tags_] == [re.findall(r'"([^"]*)"', text) for text in lists]


def test_more_distinct_names_and_values_than_the_table_takes(tmp_path, spool, monkeypatch):
    """A table of 4 slots (one distinct piece): names and values are grouped by Arrow instead,
    with the same rows and rejects as classad2."""
    from tierlens.sources.condor import fast

    monkeypatch.setattr(fast, "_TABLE_BITS", 2)
    path, _ = _damaged_file(tmp_path)
    assert _same_as_classad2([path]) == 12
    assert _same_as_classad2([spool]) == 7


def test_fast_rows_follow_a_field_added_to_the_schemas(spool):
    """The fast path's tables take every column by field name: with a field inserted into the job
    and tag schemas (the one edit records.py takes), each value is where its name is, the new
    field null, and the rows otherwise those of the unedited schemas."""
    from tierlens.records import JOB, JOB_TAG
    from tierlens.sources.condor import fast
    from tierlens.sources.condor.history import _JOB_STATUS, BATCH_SYSTEM, NEEDED, TAGGER

    def inserted(schema: pa.Schema, before: str) -> pa.Schema:
        return schema.insert(schema.get_field_index(before), pa.field("site_tier", pa.string()))

    n_jobs = n_tags = 0
    for path in history_files([spool]):
        for base, data in fast.blocks(path):
            block = fast.read_block(data, base, NEEDED)
            job, tag, tagged = fast.rows(block, "c", JOB, JOB_TAG, BATCH_SYSTEM, TAGGER, _JOB_STATUS)
            job2, tag2, tagged2 = fast.rows(
                block, "c", inserted(JOB, "user_name"), inserted(JOB_TAG, "node"), BATCH_SYSTEM, TAGGER, _JOB_STATUS
            )
            assert list(tagged) == list(tagged2)
            for plain, edited in ((job, job2), (tag, tag2)):
                assert edited.column("site_tier").null_count == len(edited)
                assert edited.drop_columns(["site_tier"]).to_pylist() == plain.to_pylist()
            n_jobs, n_tags = n_jobs + len(job), n_tags + len(tag)
    assert n_jobs > 0 and n_tags > 0


def test_fast_rows_refuse_a_name_not_in_the_schema():
    from tierlens.records import JOB_TAG
    from tierlens.sources.condor.fast import table_by_name

    with pytest.raises(KeyError, match="storage"):
        table_by_name(JOB_TAG, 1, {"storage": pa.array(["ssd"])})
