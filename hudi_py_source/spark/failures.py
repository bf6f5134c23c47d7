"""pyhudi's own error out of the Spark error that wraps it.

An error raised in a Python data source's writer or task reaches the caller wrapped by Spark
(`[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback …`), pyhudi's message
buried in the traceback. The driver-side entry points raise the pyhudi error again, so its first line is
pyhudi's message, which says what to do instead.
"""

from __future__ import annotations

import re

from .. import errors

_ATTRIBUTES = ("key", "path", "feature")
_RAISED = re.compile(r"^hudi_py_source\.errors\.(Hoodie\w*Error): (.*)$", re.MULTILINE)


def pyhudi_error(exc: BaseException) -> errors.HoodieError | None:
    """The last pyhudi error in a wrapped Spark error's text, rebuilt as its own class (with the message only: the
    attributes it had stay behind in the worker); None when there is none."""
    found = _RAISED.findall(str(exc))
    if not found:
        return None
    name, message = found[-1]
    kind = getattr(errors, name, errors.HoodieError)
    if not (isinstance(kind, type) and issubclass(kind, errors.HoodieError)):
        kind = errors.HoodieError
    error = kind.__new__(kind, message)
    error.__dict__.update(dict.fromkeys(_ATTRIBUTES))
    return error
