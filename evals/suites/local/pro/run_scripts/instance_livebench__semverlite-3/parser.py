"""Test results parser for this instance (SWE-bench Pro layout).

Usage: python parser.py STDOUT_FILE STDERR_FILE OUTPUT_JSON
Writes {"tests": [{"name": NODE_ID, "status": "PASSED|FAILED|SKIPPED|ERROR"}, ...]}.
"""

import dataclasses
import json
import re
import sys
from enum import Enum
from pathlib import Path
from typing import List


class TestStatus(Enum):
    PASSED = 1
    FAILED = 2
    SKIPPED = 3
    ERROR = 4


@dataclasses.dataclass
class TestResult:
    name: str
    status: TestStatus


# pytest -v: "tests/test_x.py::test_name PASSED [ 50%]" (parametrized ids may hold spaces)
_VERBOSE_LINE = re.compile(r"^(\S+\.py::.+?)\s+(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?\s*$")
# collection errors: "ERROR tests/test_x.py - ImportError: ..."
_COLLECTION_ERROR = re.compile(r"^ERROR (\S+\.py)(?: - .*)?$")


def parse_test_output(stdout_content: str, stderr_content: str) -> List[TestResult]:
    results: dict = {}
    for line in stdout_content.splitlines():
        line = line.rstrip()
        match = _VERBOSE_LINE.match(line)
        if match:
            name, word = match.groups()
            status = {"XFAIL": "PASSED", "XPASS": "FAILED"}.get(word, word)
            results[name] = TestResult(name, TestStatus[status])
            continue
        match = _COLLECTION_ERROR.match(line)
        if match:
            results.setdefault(match.group(1), TestResult(match.group(1), TestStatus.ERROR))
    return list(results.values())


def export_to_json(results: List[TestResult], output_path: Path) -> None:
    payload = {"tests": [{"name": r.name, "status": r.status.name} for r in results]}
    output_path.write_text(json.dumps(payload, indent=2))


def main(stdout_path: Path, stderr_path: Path, output_path: Path) -> None:
    stdout = stdout_path.read_text(errors="replace") if stdout_path.exists() else ""
    stderr = stderr_path.read_text(errors="replace") if stderr_path.exists() else ""
    export_to_json(parse_test_output(stdout, stderr), output_path)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("Usage: python parser.py <stdout_file> <stderr_file> <output_json>")
        sys.exit(1)
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
