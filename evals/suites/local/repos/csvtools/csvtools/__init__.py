"""Read and write small delimited files."""

from csvtools.reader import read_rows
from csvtools.writer import write_rows

__all__ = ["read_rows", "write_rows"]
