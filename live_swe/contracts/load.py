"""Where contracts come from and how they merge: strictest wins.

Sources, in order: the kernel's built-in contract, the user's ($LIVE_SWE_HOME/contracts/*.yaml),
the repository's (.live-swe/contract.yaml, shown to the person before its first use), files given
with --contract, and (in bench mode) the benchmark's. Every rule of every source applies; two rules
with one id both apply (their conjunction), under the stricter kind (hard over soft). The recovery
window and attempts take the smallest value, the fallback the most severe. The agent's scaffold may
add rules the same way, and so can never remove or loosen one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml
from pydantic import ValidationError

from live_swe.contracts.model import SEVERITY, Contract, Recovery, Rule
from live_swe.errors import UserError

HERE = Path(__file__).resolve().parent
BUILTIN = HERE / "builtin.yaml"
BENCH = HERE / "bench.yaml"
REPO_CONTRACT = ".live-swe/contract.yaml"
SEEN_FILE = "seen.json"  # in $LIVE_SWE_HOME/contracts: digests of repository contracts already shown


class ContractError(UserError):
    pass


def parse(text: str, where: str) -> Contract:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ContractError(f"{where}: not valid YAML ({exc.__class__.__name__}); fix the file or remove it") from None
    if not isinstance(data, dict):
        raise ContractError(f"{where}: a contract is a mapping (name, preconditions, governance, hard, soft, recovery)")
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ContractError(f"{where}: {place}: {first['msg']} — see the contract format in the README") from None


def read(path: Path) -> Contract:
    try:
        return parse(path.read_text(), str(path))
    except OSError as exc:
        raise ContractError(f"cannot read the contract {path}: {exc.strerror}") from None


def merge(contracts: Iterable[Contract], name: str = "merged") -> Contract:
    kinds: dict[str, str] = {}
    rules: dict[str, list[Rule]] = {}
    preconditions = {}
    k, attempts, fallback = None, None, None
    order = {"soft": 0, "hard": 1, "governance": 2}
    for contract in contracts:
        for kind, rule in contract.rules():
            previous = kinds.get(rule.id)
            kinds[rule.id] = kind if previous is None or order[kind] > order[previous] else previous
            same = rules.setdefault(rule.id, [])
            if rule not in same:
                same.append(rule)
        for pre in contract.preconditions:
            preconditions[(pre.id, pre.check)] = pre
        rec = contract.recovery
        k = rec.k if k is None else min(k, rec.k)
        attempts = rec.max_attempts if attempts is None else min(attempts, rec.max_attempts)
        fallback = rec.fallback if fallback is None or SEVERITY[rec.fallback] > SEVERITY[fallback] else fallback
    grouped: dict[str, list[Rule]] = {"governance": [], "hard": [], "soft": []}
    for rule_id, same in rules.items():
        kind = kinds[rule_id]
        for i, rule in enumerate(same):
            rule = rule if i == 0 else rule.model_copy(update={"id": f"{rule_id}.{i + 1}"})
            if kind == "governance" and not rule.before:
                grouped["hard"].append(rule)  # the stricter kind of a rule that can only be read afterwards
            else:
                grouped[kind].append(rule)
    recovery = Recovery(k=k or 3, max_attempts=attempts or 2, fallback=fallback or "reduce_autonomy")
    return Contract(name=name, preconditions=tuple(preconditions.values()), governance=tuple(grouped["governance"]),
                    hard=tuple(grouped["hard"]), soft=tuple(grouped["soft"]), recovery=recovery)


def loosened(before: Contract | None, after: Contract | None) -> list[str]:
    """Rules ``before`` has that ``after`` drops or changes: a scaffold may only add."""
    if before is None:
        return []
    mine = {(kind, rule.id): rule for kind, rule in (after.rules() if after else [])}
    gone = []
    for kind, rule in before.rules():
        if mine.get((kind, rule.id)) != rule:
            gone.append(f"{kind} rule {rule.id!r}")
    if after is not None and before.recovery != after.recovery:
        gone.append("the recovery settings")
    return gone


def user_contracts(home: Path) -> list[Path]:
    folder = home / "contracts"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def repository_contract(repo: Path | None, home: Path, show: Callable[[str], None]) -> Contract | None:
    """The repository's contract; shown (once per content) before it is first used."""
    if repo is None:
        return None
    path = repo / REPO_CONTRACT
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    contract = parse(text, str(path))
    digest = hashlib.sha256(text.encode()).hexdigest()
    seen_path = home / "contracts" / SEEN_FILE
    try:
        seen = set(json.loads(seen_path.read_text()))
    except (OSError, ValueError):
        seen = set()
    if digest not in seen:
        show(f"live-swe: this repository adds a contract ({path}); it applies from now on:\n{text.rstrip()}")
        seen_path.parent.mkdir(parents=True, exist_ok=True)
        seen_path.write_text(json.dumps(sorted(seen | {digest})))
    return contract


def load_for_run(*, repo: Path | None, files: Iterable[Path] = (), bench: bool = False, home: Path,
                 show: Callable[[str], None] = print) -> tuple[Contract, list[str]]:
    """The merged contract of a run and the sources it came from."""
    sources = [("builtin", read(BUILTIN))]
    sources += [(str(p), read(p)) for p in user_contracts(home)]
    repo_contract = repository_contract(repo, home, show)
    if repo_contract is not None:
        sources.append((REPO_CONTRACT, repo_contract))
    sources += [(str(p), read(Path(p))) for p in files]
    if bench:
        sources.append(("bench", read(BENCH)))
    return merge([c for _, c in sources], name="+".join(c.name for _, c in sources)), [s for s, _ in sources]
