"""Slurm benchmarks (issue: Slurm SPANK plugin and sacct ingest).

1. steps: per-step overhead of the SPANK plugin. A throw-away one-node cluster (the one the tests
   use) runs trivial `srun -n1 true` steps inside one allocation, in interleaved blocks with an
   empty plugstack.conf, with a SPANK plugin that does nothing, and with tierlens_spank.so, and
   reports the ratio of the times (target <= 1.05).
2. ingest: a synthetic `sacct --json` document of N jobs (22.05 layout, one batch step each) is
   turned into canonical JOB batches by tierlens' parser and loaded into a warehouse, against
   DuckDB's own read_json of the same document into a table of the same fields.

    .venv/bin/python bench/slurm_bench.py steps --steps 200 --rounds 10    # needs root
    .venv/bin/python bench/slurm_bench.py ingest --jobs 1000000
    .venv/bin/python bench/slurm_bench.py ingest --jobs 100000 --layout 24.11
Results are printed and written to bench/out/slurm-<what>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "pipelines"))
sys.path.insert(0, str(REPO / "tests"))
OUT = REPO / "bench" / "out"


def bench_steps(steps: int, rounds: int) -> dict:
    from support.localcluster import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="tierlens-slurm-bench-", dir="/tmp"))
    os.chmod(work, 0o755)
    try:
        build = work / "build"
        build.mkdir()
        subprocess.run(["make", "-s", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={build}"], check=True)
        # a SPANK plugin that does nothing: what Slurm's SPANK machinery alone costs per step
        noop = build / "noop.c"
        noop.write_text(
            "#include <slurm/spank.h>\nSPANK_PLUGIN(noop, 1);\n"
            "int slurm_spank_init(spank_t sp, int ac, char **av)"
            "{ (void) sp; (void) ac; (void) av; return 0; }\n"
        )
        subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", str(build / "noop.so"), str(noop)], check=True)
        lines = {"without": "", "noop": f"optional {build / 'noop.so'}"}
        lines["with"] = (
            f"optional {build / 'tierlens_spank.so'} spool={work / 'spool'} arm=hash:A,B "
            f"arm_env=B:XROOT_PROXY=root://cache:1094 arm_route=B:cache:x:1094"
        )
        for mode, text in lines.items():
            (work / f"plugstack.{mode}").write_text(text + "\n")
        with LocalCluster(work / "cluster", plugstack_lines=[]) as c:
            # Interleaved blocks inside one allocation, so a change of load on the machine hits
            # every mode alike: per block, `block` steps with each plugstack.conf in turn (the
            # order rotates). srun and slurmstepd read plugstack.conf at every step.
            script = work / "steps.sh"
            script.write_text(
                "#!/bin/bash\nset -e\n"
                "blocks=$1; block=$2; out=$3; plug=$4; dir=$5\n"
                "modes=(without noop with)\n"
                "for i in $(seq 5); do srun -n1 --quiet true; done\n"  # warm-up
                "for b in $(seq 0 $((blocks - 1))); do\n"
                "  for k in 0 1 2; do\n"
                "    mode=${modes[$(( (b + k) % 3 ))]}\n"
                '    cp "$dir/plugstack.$mode" "$plug"\n'
                "    t0=$(date +%s.%N)\n"
                "    for i in $(seq $block); do srun -n1 --quiet true; done\n"
                "    t1=$(date +%s.%N)\n"
                '    echo "$b $mode $t0 $t1" >> $out\n'
                "  done\n"
                "done\n"
            )
            script.chmod(0o755)
            results = work / "times.txt"
            block = max(1, steps // rounds)
            jid = c.run(
                [
                    "sbatch",
                    "--parsable",
                    "-n1",
                    "-o",
                    str(work / "bench.out"),
                    str(script),
                    str(rounds),
                    str(block),
                    str(results),
                    str(c.plugstack),
                    str(work),
                ]
            ).stdout.strip()
            c.wait_accounted(jid, timeout=7200)
            spool_records = len(list((work / "spool").glob("*.json")))
        per_block: dict[int, dict[str, float]] = {}
        for ln in results.read_text().splitlines():
            b, mode, t0, t1 = ln.split()
            per_block.setdefault(int(b), {})[mode] = float(t1) - float(t0)
        totals = {m: sum(v[m] for v in per_block.values()) for m in lines}
        ratios = sorted(v["with"] / v["without"] for v in per_block.values())
        ratios_noop = sorted(v["with"] / v["noop"] for v in per_block.values())
        n = block * len(per_block)
        return {
            "what": "steps",
            "steps_per_mode": n,
            "blocks": len(per_block),
            "steps_per_block": block,
            "seconds_per_block": per_block,
            "per_step_ms": {m: 1000 * t / n for m, t in totals.items()},
            "ratio_total": totals["with"] / totals["without"],
            "ratio_median_of_blocks": ratios[len(ratios) // 2],
            "ratio_total_vs_noop_plugin": totals["with"] / totals["noop"],
            "ratio_median_vs_noop_plugin": ratios_noop[len(ratios_noop) // 2],
            "spool_records_written": spool_records,
            "cpus": os.cpu_count(),
            "load_average_at_end": os.getloadavg(),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_document(path: Path, n: int) -> int:
    """A `sacct --json` (22.05, dbv0.0.38) document of n finished jobs with a batch step each."""
    t0 = 1_790_000_000
    with open(path, "w") as f:
        f.write('{"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "errors": [], "jobs": [\n')
        for i in range(n):
            start, el = t0 + i, 60 + i % 3600
            cpu = {"seconds": el // 2, "microseconds": i % 1_000_000}
            job = {
                "account": f"acct{i % 50}",
                "cluster": "bench",
                "job_id": 1000 + i,
                "user": f"u{i % 300}",
                "partition": "prod" if i % 3 else "short",
                "nodes": f"wn{i % 64:03d}",
                "state": {"current": "COMPLETED", "reason": "None"},
                "exit_code": {"status": "SUCCESS", "return_code": 0},
                "time": {
                    "elapsed": el,
                    "eligible": start - 5,
                    "end": start + el,
                    "start": start,
                    "submission": start - 5,
                    "suspended": 0,
                    "system": {"seconds": 0, "microseconds": 0},
                    "total": {"seconds": 0, "microseconds": 0},
                    "user": {"seconds": 0, "microseconds": 0},
                },
                "tres": {"allocated": [{"type": "cpu", "name": None, "id": 1, "count": 1 + i % 8}]},
                "steps": [
                    {
                        "step": {"job_id": 1000 + i, "id": "batch", "name": "batch"},
                        "nodes": {"list": [f"wn{i % 64:03d}"], "count": 1, "range": f"wn{i % 64:03d}"},
                        "state": "COMPLETED",
                        "exit_code": {"status": "SUCCESS", "return_code": 0},
                        "time": {
                            "elapsed": el,
                            "end": start + el,
                            "start": start,
                            "suspended": 0,
                            "system": {"seconds": 1, "microseconds": 0},
                            "total": cpu,
                            "user": cpu,
                        },
                        "tres": {
                            "allocated": [{"type": "cpu", "name": None, "id": 1, "count": 1 + i % 8}],
                            "requested": {"total": [{"type": "fs", "name": "disk", "id": 6, "count": i * 10}]},
                            "consumed": {"total": [{"type": "fs", "name": "disk", "id": 6, "count": i * 3}]},
                        },
                    }
                ],
            }
            f.write(("," if i else "") + json.dumps(job, separators=(",", ":")) + "\n")
        f.write("]}\n")
    return path.stat().st_size


def _write_document_2411(path: Path, n: int) -> int:
    """A `sacct --json` document as 24.11 prints it (data_parser v0.0.42, two-space indents,
    {set, infinite, number} wrappers, state lists), n finished jobs with a batch step each; one
    in 50 is a launch failure (start NO_VAL, no steps). The job layout is the tests' own."""
    from support.sacct import NO_VAL, T0, job_2411

    with open(path, "w") as f:
        f.write('{\n  "jobs": [\n')
        for i in range(n):
            start = NO_VAL if i % 50 == 49 else T0 + i
            job = job_2411(
                1000 + i,
                start=start,
                end=T0 + i + 60 + i % 3600,
                state="FAILED" if start == NO_VAL else "COMPLETED",
                steps=start != NO_VAL,
            )
            f.write((",\n" if i else "") + json.dumps(job, indent=2))
        f.write(
            '\n  ],\n  "meta": {"plugin": {"type": "openapi/slurmdbd", "data_parser": "data_parser/v0.0.42"}},'
            '\n  "errors": [],\n  "warnings": []\n}\n'
        )
    return path.stat().st_size


def _child(code: str) -> dict:
    """Run a measurement in a fresh process: wall time measured inside, peak RSS from the kernel."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_ingest(jobs: int, layout: str = "22.05") -> dict:
    work = Path(tempfile.mkdtemp(prefix="tierlens-sacct-bench-"))
    try:
        doc = work / "sacct.json"
        load_before = os.getloadavg()
        t = time.perf_counter()
        size = (_write_document if layout == "22.05" else _write_document_2411)(doc, jobs)
        gen = time.perf_counter() - t
        tierlens = _child(f"""
import json, os, sys, time
sys.path.insert(0, "pipelines")
from pathlib import Path
from tierlens.sources.slurm.sacct import iter_json_rows, stream_batches
from tierlens.pipeline import ingest
t0 = time.perf_counter()
with open({str(doc)!r}, encoding="utf-8") as f:
    s = ingest(stream_batches(iter_json_rows(f, "bench"), "bench"), Path({str(work / "tl.duckdb")!r}))
t1 = time.perf_counter()
import resource
print(json.dumps({{"rows": sum(s.rows_loaded.values()), "total_s": t1 - t0,
                  "rejected": s.total_rejected, "load_average_at_end": os.getloadavg(),
                  "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
""")
        duck = _child(f"""
import duckdb, json, os, time
t0 = time.perf_counter()
con = duckdb.connect({str(work / "duck.duckdb")!r})
con.execute(\"\"\"CREATE TABLE job AS
  SELECT j.job_id, j.cluster, j.user, j.account, j.partition, j.nodes,
         to_timestamp(j.time.start) AS start_time, to_timestamp(j.time.end) AS end_time,
         j.time.elapsed AS wall_seconds, j.tres.allocated[1].count AS cores,
         list_sum([s.time.user.seconds + s.time.user.microseconds / 1e6 for s in j.steps]) AS cpu_user,
         list_sum([s.time.system.seconds + s.time.system.microseconds / 1e6 for s in j.steps]) AS cpu_system,
         j.state.current AS state
  FROM (SELECT unnest(jobs) AS j FROM read_json({str(doc)!r}, maximum_object_size = 4000000000))\"\"\")
n = con.execute("SELECT count(*) FROM job").fetchone()[0]
t1 = time.perf_counter()
import resource
print(json.dumps({{"rows": n, "total_s": t1 - t0, "load_average_at_end": os.getloadavg(),
                  "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
""")
        return {
            "what": "ingest",
            "jobs": jobs,
            "layout": layout,
            "document_bytes": size,
            "generate_s": gen,
            "tierlens": tierlens,
            "duckdb_read_json": duck,
            "tierlens_jobs_per_cpu_s": jobs / tierlens["cpu_s"],
            "duckdb_jobs_per_cpu_s": jobs / duck["cpu_s"],
            # the target: tierlens CPU <= 1.2x DuckDB's, peak memory <= 1 GB
            "ratio_cpu_tierlens_over_duckdb": tierlens["cpu_s"] / duck["cpu_s"],
            "ratio_wall_tierlens_over_duckdb": tierlens["total_s"] / duck["total_s"],
            "load_average_before_after": [load_before, os.getloadavg()],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("steps")
    s.add_argument("--steps", type=int, default=200, help="steps per mode")
    s.add_argument("--rounds", type=int, default=10, help="interleaved blocks the steps are cut in")
    i = sub.add_parser("ingest")
    i.add_argument("--jobs", type=int, default=1_000_000)
    i.add_argument(
        "--layout",
        choices=["22.05", "24.11"],
        default="22.05",
        help="sacct's JSON layout: 22.05 (dbv0.0.38, compact) or 24.11 (v0.0.42, indented)",
    )
    a = ap.parse_args()
    res = bench_steps(a.steps, a.rounds) if a.what == "steps" else bench_ingest(a.jobs, a.layout)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"slurm-{a.what}.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
