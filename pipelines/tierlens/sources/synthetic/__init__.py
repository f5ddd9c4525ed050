"""The built-in synthetic Tier-2 site: a discrete-event model whose output looks like real sources."""

from .generate import SyntheticOptions, generate
from .site import SiteSpec, demo_site

__all__ = ["SyntheticOptions", "generate", "SiteSpec", "demo_site"]
