"""tierlens: worker-node storage, caching and CPU efficiency for grid and HPC sites."""

__version__ = "0.1.0"
