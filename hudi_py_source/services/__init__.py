"""Table services: compaction, cleaning, archival, clustering, savepoints and commit callbacks.

Plain Python over the storage layer, so they run the same from a write's post-commit step, from
the Python API on demand, and inside Spark executors.
"""
