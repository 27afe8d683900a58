"""Reading files the user gives: bounded reads with one set of errors, and strict YAML.

    read.py         read_bounded (at most a limit of bytes, a writerless pipe read as empty), read_text
                    (text or one error: unreadable, too large, not UTF-8) and check_path (a path argument)
    strict_yaml.py  parse_yaml / read_yaml: YAML 1.2's plain scalars, no duplicate keys or aliases, a mapping

Writing stays in rooflab/output.py (write_atomic).
"""

from .read import MAX_SPEC_FILE_BYTES, check_path, read_bounded, read_text
from .strict_yaml import parse_yaml, read_yaml

__all__ = ["MAX_SPEC_FILE_BYTES", "check_path", "parse_yaml", "read_bounded", "read_text", "read_yaml"]
