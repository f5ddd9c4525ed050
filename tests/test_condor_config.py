"""deploy/htcondor/50-tierlens.conf through HTCondor's own configuration parser (htcondor2.param
with CONDOR_CONFIG), and its transforms and requirements evaluated by classad2 (no mocks).

The schedd's ClassAd-form transform is applied here as HTCondor documents it: `Requirements`
evaluated against the submitted job decides whether it applies; then copy_<A> = "B" copies A to
B, set_<A> stores an expression, eval_set_<A> stores the expression's value in the job's context.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

htcondor2 = pytest.importorskip("htcondor2")
classad2 = pytest.importorskip("classad2")

from support.condor import CONF, apply  # noqa: E402
from tierlens.probe.detect import cron  # noqa: E402
from tierlens.records import job_identity  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GJID = "ap01.t2.example.org#4242.7#1763800000"


@pytest.fixture
def param(tmp_path, monkeypatch):
    """htcondor2.param for a pool whose local config includes our config.d file, plus ``extra``."""

    def load(extra: str = "", before: str = "") -> object:
        cfg = tmp_path / "condor_config"
        cfg.write_text(
            before + "COLLECTOR_HOST = cm.t2.example.org\n"
            "EXECUTE = /var/lib/condor/execute\n"
            "NUM_CPUS = 64\n"
            f"include : {CONF}\n" + extra
        )
        monkeypatch.setenv("CONDOR_CONFIG", str(cfg))
        htcondor2.reload_config()
        return htcondor2.param

    return load  # the test pool's configuration stays loaded afterwards: nothing else reads it


def job_ad(**attrs) -> classad2.ClassAd:
    ad = classad2.ClassAd()
    ad["JobUniverse"] = 5
    ad["GlobalJobId"] = GJID
    ad["Requirements"] = classad2.ExprTree('TARGET.OpSys == "LINUX"')
    for k, v in attrs.items():
        ad[k] = v
    return ad


def env_v2(text: str) -> dict[str, str]:
    """The V2 environment syntax: whitespace-separated NAME=value, single quotes group."""
    return dict(tok.split("=", 1) for tok in shlex.split(text))


# --------------------------------------------------------------------------- expanded knobs


def test_startd_cron_knobs(param):
    p = param()
    assert "TIERLENS" in p["STARTD_CRON_JOBLIST"].split()
    assert p["STARTD_CRON_TIERLENS_EXECUTABLE"] == "/usr/libexec/tierlens/tierlens_startd_cron.py"
    assert p["STARTD_CRON_TIERLENS_MODE"] == "Periodic"
    assert p["STARTD_CRON_TIERLENS_PERIOD"] == "15m"
    args = p["STARTD_CRON_TIERLENS_ARGS"]
    # LVM_BACKING_FILE defaults to $(SPOOL)/startd_disk.img; this test pool sets no SPOOL
    assert args == (
        "--scratch=/var/lib/condor/execute --ab-arm= --cache-route= --slots=64 "
        "--enforce-disk-limits=false --lvm-vg= --lvm-backing-file=/spool/startd_disk.img"
    )


def test_cron_args_reach_the_script(param, capsys):
    """The expanded ARGS, as the startd would pass them, parsed by the script itself."""
    p = param("TIERLENS_AB_ARM = B\nTIERLENS_CACHE_ROUTE = cache:xcache01:1094\n")
    vector = REPO / "tests" / "vectors" / "sata_ssd_whole_disk" / "root"
    argv = shlex.split(p["STARTD_CRON_TIERLENS_ARGS"]) + ["--root", str(vector)]
    assert cron.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "-"
    ad = classad2.parseOne("\n".join(out[:-1]))
    assert ad["TierlensScratchPath"] == "/var/lib/condor/execute"
    assert ad["TierlensAbArm"] == "B"
    assert ad["TierlensCacheRoute"] == "cache:xcache01:1094"
    assert ad["TierlensNodeSlots"] == 64
    # every attribute the cron publishes and the ingest reads is copied into the job ads
    copied = set(p["SYSTEM_JOB_MACHINE_ATTRS"].replace(",", " ").split())
    for attr in (
        "TierlensStorageType",
        "TierlensScratchDevices",
        "TierlensScratchPath",
        "TierlensAbArm",
        "TierlensCacheRoute",
        "TierlensNodeSlots",
    ):
        assert attr in ad and attr in copied
    # and the defaults HTCondor copies already (Cpus, SlotWeight) are kept
    assert {"Cpus", "SlotWeight"} <= copied


def test_site_settings_expand(param):
    p = param("TIERLENS_CLUSTER = UKI-T2-TEST\n")
    assert p["TIERLENS_CLUSTER"] == "UKI-T2-TEST"
    assert '"UKI-T2-TEST"' in p["JOB_TRANSFORM_TierlensIdentity"]
    assert "$(" not in "".join(p[f"JOB_TRANSFORM_{n}"] for n in p["JOB_TRANSFORM_NAMES"].split())
    assert "$(" not in p["STARTD_CRON_TIERLENS_ARGS"]


def test_site_settings_from_an_earlier_file_are_kept(param):
    p = param(
        before="TIERLENS_CLUSTER = EARLY\nTIERLENS_AB_ARM = A\nTIERLENS_AB_TRIAL = true\nTIERLENS_SCRATCH = /scratch\n"
    )
    assert p["TIERLENS_CLUSTER"] == "EARLY"
    assert p["STARTD_CRON_TIERLENS_ARGS"].startswith("--scratch=/scratch --ab-arm=A ")
    assert p["JOB_TRANSFORM_TierlensAbTrial"].count("(true) && ((JobUniverse =?= 5))") == 1
    p = param()
    assert p["TIERLENS_CLUSTER"] == "cm.t2.example.org"  # the default


# --------------------------------------------------------------------------- identity and XRD_MONINFO


def test_identity_is_records_job_identity(param):
    p = param()
    job = job_ad()
    assert "TierlensIdentity" in apply(p, job)
    assert job["TierlensCluster"] == "cm.t2.example.org"
    assert job["TierlensJobIdentity"] == job_identity("htcondor", "cm.t2.example.org", GJID)
    assert env_v2(job["Environment"]) == {"XRD_MONINFO": job["TierlensJobIdentity"]}


def test_job_without_global_job_id_is_left_alone(param):
    p = param()
    job = job_ad()
    del job["GlobalJobId"]
    assert apply(p, job) == []
    assert "Environment" not in job and "TierlensJobIdentity" not in job


def test_moninfo_prepended_to_users_environment(param):
    p = param()
    job = job_ad(Environment="FOO=1 BAR='a b c' XRD_APPNAME=athena")
    apply(p, job)
    env = env_v2(job["Environment"])
    assert env == {
        "XRD_MONINFO": job_identity("htcondor", "cm.t2.example.org", GJID),
        "FOO": "1",
        "BAR": "a b c",
        "XRD_APPNAME": "athena",
    }
    assert job["Environment"].startswith("XRD_MONINFO=")  # a later user value would still win


@pytest.mark.parametrize(
    "environment",
    [
        "XRD_MONINFO=my.own.id",
        "FOO=1 XRD_MONINFO=my.own.id",
        "FOO=1  'XRD_MONINFO=my.own.id'",
    ],
)
def test_users_own_moninfo_is_not_overridden(param, environment):
    p = param()
    job = job_ad(Environment=environment)
    applied = apply(p, job)
    assert "TierlensMonInfo" not in applied and "TierlensMonInfoV1" not in applied
    assert job["Environment"] == environment
    assert env_v2(job["Environment"])["XRD_MONINFO"] == "my.own.id"
    assert job["TierlensJobIdentity"]  # still recorded: the ingest uses it for the job row


def test_legacy_v1_env(param):
    p = param()
    job = job_ad(Env="A=1;B=2", EnvDelim=";")
    apply(p, job)
    assert "Environment" not in job  # a V2 Environment would hide the user's V1 Env
    assert job["Env"] == f"XRD_MONINFO={job['TierlensJobIdentity']};A=1;B=2"
    job = job_ad(Env="A=1; XRD_MONINFO=mine", EnvDelim=";")
    apply(p, job)
    assert job["Env"] == "A=1; XRD_MONINFO=mine"


# --------------------------------------------------------------------------- A/B trial


def machine(arm: str | None) -> classad2.ClassAd:
    m = classad2.ClassAd()
    m["OpSys"] = "LINUX"
    if arm is not None:
        m["TierlensAbArm"] = arm
    return m


def test_trial_off_by_default(param):
    p = param()
    job = job_ad()
    assert "TierlensAbTrial" not in apply(p, job)
    assert "TierlensAbArm" not in job


def test_trial_draws_arms_and_requires_a_node_of_that_arm(param):
    p = param("TIERLENS_AB_TRIAL = true\nTIERLENS_AB_FRACTION_B = 0.25\n")
    arms = []
    for _ in range(800):
        job = job_ad()
        assert "TierlensAbTrial" in apply(p, job)
        arms.append(job["TierlensAbArm"])
    assert set(arms) == {"A", "B"}
    share_b = arms.count("B") / len(arms)
    assert 0.19 < share_b < 0.31  # binomial(800, 0.25): sd 0.015, so ±4 sd

    job = job_ad()
    apply(p, job)
    arm, other = job["TierlensAbArm"], {"A": "B", "B": "A"}[job["TierlensAbArm"]]
    req = job.lookup("Requirements")
    assert req.eval(scope=job, target=machine(arm)) is True
    assert req.eval(scope=job, target=machine(other)) is False
    assert req.eval(scope=job, target=machine(None)) is False
    # the user's own requirements still hold
    windows = machine(arm)
    windows["OpSys"] = "WINDOWS"
    assert req.eval(scope=job, target=windows) is False


def test_trial_only_for_selected_jobs(param):
    p = param('TIERLENS_AB_TRIAL = true\nTIERLENS_AB_TRIAL_JOBS = AcctGroup =?= "atlas"\n')
    job = job_ad(AcctGroup="cms")
    assert "TierlensAbTrial" not in apply(p, job)
    job = job_ad(AcctGroup="atlas")
    assert "TierlensAbTrial" in apply(p, job)
    assert job["TierlensAbArm"] in ("A", "B")


def test_config_file_has_no_unknown_tierlens_knobs(param):
    """Every TIERLENS_* macro the file uses is defined in it (a typo would expand to nothing)."""
    import re

    text = CONF.read_text()
    used = set(re.findall(r"\$\((TIERLENS_[A-Z_]+)\)", text))
    defined = set(re.findall(r"^(TIERLENS_[A-Z_]+)\s*=", text, flags=re.M))
    assert used <= defined, used - defined
    p = param()
    for knob in defined - {"TIERLENS_AB_ARM", "TIERLENS_CACHE_ROUTE"}:  # empty by default
        assert p.get(knob), knob
    assert os.access(REPO / "plugins" / "htcondor" / "tierlens_startd_cron.py", os.X_OK)
