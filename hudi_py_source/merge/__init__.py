"""Payload semantics (precombine, ordering, soft deletes) and the spillable map used when merging a file group."""
