"""Build step: bundle the dbt project, the sql/ queries and the startd cron script into the package.

They stay at the top of the repository, where readers and dbt users look for them; a wheel (built
directly or from the sdist, whose MANIFEST.in carries them) gets a copy as ``tierlens/_bundled/``,
which tierlens.resources finds through importlib.resources. Editable installs need no copy: the
lookup falls back to the clone's folders. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: What is bundled, relative to the repository root (and so to tierlens/_bundled/).
SHIPPED = ("dbt", "sql", "plugins/htcondor/tierlens_startd_cron.py")
#: dbt's own output folders, never shipped.
SKIP = shutil.ignore_patterns("target", "logs", "dbt_packages", "__pycache__", ".user.yml")


class BuildPyWithBundle(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the clone's folders are found directly
            return
        bundle = Path(self.build_lib) / "tierlens" / "_bundled"
        for relative in SHIPPED:
            source, dest = ROOT / relative, bundle / relative
            if not source.exists():
                raise FileNotFoundError(f"cannot bundle {source}: the sdist or clone is incomplete (MANIFEST.in)")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, dest, ignore=SKIP, dirs_exist_ok=True)
            else:
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": BuildPyWithBundle})
