"""Cost of redacting the session log: one event line (medians of N rounds over a realistic mix).

    python benchmarks/redaction.py [--n 2000] [--secrets 4] [--json]

The kernel masks every secret it holds (plain, JSON-escaped, base64 at three alignments, two
alphabets) in each serialized event before it is appended; target <= 0.1 ms per event. Measured on
events shaped like a session's (a step record, a reply, a 1 kB and a 10 kB observation, one with a
leaked key in it), with ``--secrets`` credentials in the environment. Printed next to its anchor,
``json.dumps`` of the same event (the serialization every append already pays), and next to the
naive alternative, one ``str.replace`` per form.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import statistics
import time


def _events(leaked: str) -> list[dict]:
    listing = "".join(f"-rw-r--r-- 1 dev dev {1000 + i:>6} Jan  1 00:00 module_{i}.py\n" for i in range(24))
    source = "".join(f"    def method_{i}(self, value):\n        return value * {i}\n" for i in range(170))
    return [
        {"t": "step", "step": 12, "command": "grep -rn 'def total' shop/", "returncode": 0, "timed_out": False,
         "cost": 0.0123, "elapsed": 41.2, "ts": 1733000000.123},
        {"t": "message", "step": 12, "message": {"role": "assistant", "content":
            "THOUGHT: The total is computed in shop/cart.py; let me read it.\n\n```bash\nsed -n 1,80p shop/cart.py\n```"},
         "ts": 1733000000.2},
        {"t": "message", "step": 12, "message": {"role": "user", "content":
            f"<returncode>0</returncode>\n<output>\n{listing}</output>"}, "ts": 1733000000.3},
        {"t": "message", "step": 13, "message": {"role": "user", "content":
            f"<returncode>0</returncode>\n<output>\n{source}</output>"}, "ts": 1733000000.4},
        {"t": "message", "step": 14, "message": {"role": "user", "content":
            f"<returncode>0</returncode>\n<output>\nOPENAI_API_KEY={leaked}\n"
            f"{base64.b64encode(leaked.encode()).decode()}\n</output>"}, "ts": 1733000000.5},
    ]


def _median_us(func, lines: list[str], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for line in lines:
            func(line)
        samples.append((time.perf_counter() - started) / len(lines))
    return round(statistics.median(samples) * 1e6, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="rounds over the event mix")
    parser.add_argument("--secrets", type=int, default=4, help="credentials in the environment")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    values = [f"sk-{secrets.token_urlsafe(36)}" for _ in range(args.secrets)]
    for index, value in enumerate(values):
        os.environ[f"BENCH_{index}_API_KEY"] = value
    from live_swe.infra.redact import forms, redactor

    redact = redactor()
    events = _events(values[0])
    lines = [json.dumps(event, ensure_ascii=False) for event in events]
    assert values[0] not in redact(lines[-1])
    every_form = sorted({f for v in redact.secrets for f in forms(v)}, key=len, reverse=True)

    def naive(line: str) -> str:
        for form in every_form:
            line = line.replace(form, "***")
        return line

    figures = {
        "secrets": len(redact.secrets),
        "forms": len(every_form),
        "event_bytes_median": statistics.median(len(line) for line in lines),
        "redact_us_per_event": _median_us(redact, lines, args.n),
        "anchor_json_dumps_us_per_event": _median_us(lambda i: json.dumps(events[i], ensure_ascii=False),
                                                     list(range(len(events))), args.n),
        "naive_replace_us_per_event": _median_us(naive, lines, args.n),
        "redact_us_10kB_observation": _median_us(redact, [lines[3]], args.n),
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"{figures['secrets']} secrets in the environment, {figures['forms']} forms masked; "
          f"events of {figures['event_bytes_median']:.0f} bytes (median)")
    print(f"redaction, per event:               {figures['redact_us_per_event']:>8.2f} us   (target <= 100 us)")
    print(f"anchor: json.dumps of the event:    {figures['anchor_json_dumps_us_per_event']:>8.2f} us")
    print(f"naive: str.replace per form:        {figures['naive_replace_us_per_event']:>8.2f} us")
    print(f"redaction of a 10 kB observation:   {figures['redact_us_10kB_observation']:>8.2f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
