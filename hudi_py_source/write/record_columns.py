"""The working columns a write adds to incoming records between tagging and the file writers.

They carry each record's key, partition path, target file group and delete flag through the task side, the
commit's staging and the file-group writers, and are dropped before a row reaches a file. Their names cannot
collide with a user's column: Hudi forbids no such names, so they carry pyhudi's own prefix.
"""

KEY_COLUMN = "__pyhudi_record_key"
PATH_COLUMN = "__pyhudi_partition_path"
FILE_ID_COLUMN = "__pyhudi_file_id"
DELETE_COLUMN = "__pyhudi_delete"
