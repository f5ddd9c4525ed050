"""Site changes as data: the site_change record, from the command line or a site's change log."""

from .log import ChangeEntry, change_batch, read_change_log

__all__ = ["ChangeEntry", "change_batch", "read_change_log"]
