"""The built-in synthetic Tier-2 site: a discrete-event model whose output looks like real sources."""

from .generate import MixShift, SyntheticChange, SyntheticOptions, generate
from .site import SiteSpec, demo_site

__all__ = ["MixShift", "SyntheticChange", "SyntheticOptions", "generate", "SiteSpec", "demo_site"]
