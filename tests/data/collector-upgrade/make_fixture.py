"""Write the collector out folder of tests/test_collector_upgrade.py with the collector of an
earlier tierlens (the one whose checkpoint holds an unversioned pickle snapshot), as a running
collector leaves it when it is killed for an upgrade: batches and a checkpoint committed, and
journaled datagrams after the checkpoint not yet committed. Run with that tierlens first on the
path:

    PYTHONPATH=<old checkout>/pipelines python tests/data/collector-upgrade/make_fixture.py OUT

The stream is upgrade_stream() of tests/support/udp_streams.py (the same SimServer calls, so the same ids).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from support.collectors import collector_stats, start_collector, udp_socket, wait_until  # noqa: E402
from support.udp_streams import upgrade_stream  # noqa: E402
from tierlens.collector import journal as jr  # noqa: E402


def main(dest: Path) -> None:
    work = Path("/tmp/collector-upgrade-fixture")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    out = work / "out"
    before, after_checkpoint, _ = upgrade_stream()
    spare = [open("/dev/null") for _ in range(3)]  # start_collector moves the socket to fd 3: it must not be 3
    sock = udp_socket(4 << 20)
    port = sock.getsockname()[1]
    proc = start_collector(
        sock, out, "--max-seconds", "4", "--journal-segment-mb", "1", "--journal-retention", "100000"
    )
    try:
        wait_until(lambda: collector_stats(out).get("state") == "listening", "listening")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as snd:
            for p in before:
                snd.sendto(p, ("127.0.0.1", port))
            wait_until(lambda: collector_stats(out).get("packets", 0) >= len(before), "the first part decoded")
            t = time.time()
            ck = out / "checkpoint.json"
            wait_until(lambda: ck.exists() and json.loads(ck.read_text())["written_at"] > t, "a checkpoint after it")
            for p in after_checkpoint:
                snd.sendto(p, ("127.0.0.1", port))
            time.sleep(0.5)  # journaled by the receiver, not committed by the decoder
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()
        for f in spare:
            f.close()
    for seg in (out / "journal").glob("w*/seg-*.tlj"):
        jr.seal_segment(seg)
    shutil.rmtree(dest, ignore_errors=True)
    keep = [
        p
        for p in out.rglob("*")
        if p.is_file()
        and p.name not in ("collector-stats.json",)
        and not p.name.startswith(".")
        and p.suffix != ".lock"
        and "status" not in p.name
    ]
    for p in keep:
        target = dest / p.relative_to(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    print("\n".join(sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
