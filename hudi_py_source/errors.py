"""Errors a user can act on: each names the option, record or file at fault."""


class HoodieError(Exception):
    """Base of every error pyhudi raises on purpose."""


class HoodieConfigError(HoodieError, ValueError):
    """An option has an invalid or unsupported value; the message names the key."""


class HoodieKeyError(HoodieError, ValueError):
    """A record key or partition path cannot be built for a record."""


class HoodieSchemaError(HoodieError, ValueError):
    """Incoming data does not fit the table's schema."""


class HoodieTableError(HoodieError):
    """The path holds no Hudi table, a different table, or a table we cannot handle."""


class HoodieTimelineError(HoodieError):
    """The timeline does not allow the requested transition."""


class HoodieCorruptedDataError(HoodieError):
    """A file of the table (timeline, base or log file) is damaged; the message names it and the repair."""


class HoodieTableChangedError(HoodieTimelineError):
    """The table changed under a read: a timeline file or data file it planned with was archived, cleaned or
    rolled back meanwhile. Nothing is wrong with the table; running the query again sees its new state."""
