"""deploy/airflow/README.md's shell blocks as the tests run them (only the checkout and the trial's
home replaced by the test's), and the scheduler's view of a DAG's pause in Airflow's SQLite
database: shared by the standalone script's test and the trial block's."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def paused(db: Path, dag_id: str) -> bool | None:
    """Whether the scheduler has ``dag_id`` paused; None while the DAG processor has not stored it."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT is_paused FROM dag WHERE dag_id = ?", [dag_id]).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return bool(rows[0][0]) if rows else None


#: Where deploy/airflow/README.md's blocks put the checkout and the trial's home; the test puts
#: its own in their place and changes nothing else in the block.
README_CHECKOUT = "cd /opt/tierlens\n"
README_TRIAL_HOME = "export TIERLENS_HOME=/srv/tierlens-trial\n"


def readme_block(holding: str) -> str:
    """The one shell block of deploy/airflow/README.md that holds ``holding``."""
    text = (REPO / "deploy" / "airflow" / "README.md").read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if holding in b]
    assert len(blocks) == 1, blocks
    return blocks[0]


def trial_block() -> str:
    """deploy/airflow/README.md's block that tries the small-site set-up on the synthetic site."""
    return readme_block("TIERLENS_SOURCES=synthetic")


def in_test_paths(block: str, home: Path) -> str:
    """``block`` with the test's checkout and tierlens home in place of the README's."""
    assert block.startswith(README_CHECKOUT) and README_TRIAL_HOME in block, block
    return block.replace(README_CHECKOUT, f"cd {shlex.quote(str(REPO))}\n").replace(
        README_TRIAL_HOME, f"export TIERLENS_HOME={shlex.quote(str(home))}\n"
    )


def trial_script(home: Path) -> str:
    block = trial_block()
    # what the README has the reader set: nothing of the synthetic site's own settings
    exported = re.findall(r"^export (TIERLENS_\w+)=", block, re.M)
    assert sorted(exported) == ["TIERLENS_HOME", "TIERLENS_SOURCES", "TIERLENS_START_DATE"], block
    assert "export TIERLENS_START_DATE=$(date -u +%F)" in block and block.rstrip().endswith(
        "deploy/airflow/standalone.sh"
    ), block
    return in_test_paths(block, home)
