"""tierlens: worker-node storage, caching and CPU efficiency for grid and HPC sites."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tierlens")
except PackageNotFoundError:  # imported from a clone that was never pip-installed
    __version__ = "0+unknown"
