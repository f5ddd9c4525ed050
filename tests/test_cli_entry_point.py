"""The console command `tierlens` is the entry point pyproject.toml names, and that is the app
the cli package builds (not a wrapper beside it)."""

from __future__ import annotations

import importlib
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import typer
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]


def _named() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["tierlens"]


def test_pyproject_names_the_cli_app():
    module, _, name = _named().partition(":")
    target = getattr(importlib.import_module(module), name)
    from tierlens.cli import app

    assert target is app and isinstance(app, typer.Typer)
    assert "ingest" in CliRunner().invoke(app, ["--help"]).output


def test_the_installed_console_script_is_the_one_pyproject_names():
    (script,) = entry_points(group="console_scripts", name="tierlens")
    assert script.value == _named()
