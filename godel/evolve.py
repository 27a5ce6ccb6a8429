"""The evolve loop: select parents, diagnose, make children, gate, stage, archive.

State lives in ``$LIVE_SWE_HOME/archive/runs/<run>/state.json``, replaced atomically after every
phase of every child (made, gated, each stage), so ``kill -9`` loses at most the phase in flight and
re-running the same command continues where it stopped. Each child moves through::

    pending -> made -> gated -> (stage 1 .. stage N) -> accepted
                  \\-> rejected (gates, or no change)   \\-> stopped (below a stage's threshold)

Only accepted children become archive nodes. Every evaluation goes through ``_run_eval``, which
logs the instances to ``ran.jsonl`` and refuses any instance of the held-out report split.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from godel.archive import Archive, Node, write_json_atomic
from godel.diagnose import diagnose
from godel.evaluation import Evaluate, Outcome, normalise
from godel.gates import check_child, summarize
from godel.improve import Improve
from godel.selection import DGM, Candidate, select_parents
from godel.staging import Stage, passes, split_instances, stage_instances
from live_swe.errors import UserError
from live_swe.grading.aggregate import mean_scores
from live_swe.grading.session import grade_session_dirs
from live_swe.scaffolding.refs import materialize

PENDING, MADE, GATED, ACCEPTED, REJECTED, STOPPED = "pending", "made", "gated", "accepted", "rejected", "stopped"
TERMINAL = (ACCEPTED, REJECTED, STOPPED)


class SplitLeak(RuntimeError):
    """A report-split instance was about to be run during selection: a bug, never allowed."""


class EvolveConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str
    model: str
    improver_model: str
    generations: int = Field(ge=0)
    children: int = Field(ge=1)
    budget: float | None = Field(default=None, ge=0)
    selection: str = DGM
    seed: int = 0
    scaffold: str = "seed"  # the root
    report_fraction: float = 0.34
    stages: list[Stage] = [Stage(size=3, threshold=0.34), Stage(size=8, threshold=0.0)]
    instances: list[str] | None = None  # restrict the suite (before the split)

    def run_id(self) -> str:
        """Same suite, models, root, seed, selection and split -> same run (so a rerun resumes it)."""
        key = json.dumps([self.suite, self.model, self.improver_model, self.scaffold, self.seed, self.selection,
                          self.report_fraction, sorted(self.instances or []),
                          [s.model_dump() for s in self.stages]])
        return "run-" + hashlib.sha1(key.encode()).hexdigest()[:10]


class ChildRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    generation: int
    parent: str
    status: str = PENDING
    reason: str = ""
    stages_passed: int = 0
    results: dict[str, bool] = {}
    sessions: dict[str, str] = {}
    eval_cost: float = 0.0
    improve_cost: float = 0.0
    improver_session: str | None = None
    node: str | None = None


class Generation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    parents: list[str]
    done: bool = False


class EvolveState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    config: EvolveConfig
    selection_split: list[str]
    report_split: list[str]
    root: str | None = None
    generations: list[Generation] = []
    children: dict[str, ChildRecord] = {}
    spent: float = 0.0
    status: str = "running"  # running | done | budget


class Evolver:
    def __init__(self, config: EvolveConfig, *, evaluate: Evaluate, improve: Improve,
                 instance_ids: Callable[[], list[str]], archive: Archive | None = None,
                 say: Callable[[str], None] = lambda line: None):
        self.config = config
        self.evaluate = evaluate
        self.improve = improve
        self.instance_ids = instance_ids
        self.archive = archive or Archive.default()
        self.say = say
        self.run_dir = self.archive.runs_dir / config.run_id()
        self.state = self._load_or_start()

    # -- state
    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    def _load_or_start(self) -> EvolveState:
        if self.state_path.exists():
            state = EvolveState.model_validate_json(self.state_path.read_text())
            # More generations or children on a rerun extend the run; the rest is fixed by the run id.
            state.config = state.config.model_copy(update={
                "generations": self.config.generations, "children": self.config.children,
                "budget": self.config.budget})
            if state.status != "running":
                state.status = "running"
            self.say(f"resuming {state.run_id} ({len(state.children)} children so far)")
            return state
        ids = self.instance_ids()
        if self.config.instances:
            unknown = sorted(set(self.config.instances) - set(ids))
            if unknown:
                raise UserError(f"{self.config.suite}: no instance(s) {', '.join(unknown[:5])}")
            ids = list(self.config.instances)
        split = split_instances(ids, seed=self.config.seed, report_fraction=self.config.report_fraction)
        state = EvolveState(run_id=self.config.run_id(), config=self.config,
                            selection_split=split.selection, report_split=split.report)
        self.say(f"new run {state.run_id}: {len(split.selection)} selection / {len(split.report)} report instances")
        self._save(state)
        return state

    def _save(self, state: EvolveState | None = None) -> None:
        write_json_atomic(self.state_path, (state or self.state).model_dump())

    # -- evaluation (the only door to the evaluator)
    def _run_eval(self, ref: str, instance_ids: list[str], label: str) -> dict[str, Outcome]:
        leaked = sorted(set(instance_ids) & set(self.state.report_split))
        if leaked:
            raise SplitLeak(f"refusing to run report-split instances during evolve: {leaked}")
        if not instance_ids:
            return {}
        with (self.run_dir / "ran.jsonl").open("a", encoding="utf-8") as log:
            log.write(json.dumps({"label": label, "scaffold": ref, "instances": instance_ids}) + "\n")
        outcomes = normalise(self.evaluate(ref, instance_ids, self.run_dir / "eval" / label), instance_ids)
        cost = sum(o.cost for o in outcomes.values())
        self.state.spent += cost
        return outcomes

    @property
    def stages(self) -> list[list[str]]:
        return stage_instances(self.state.selection_split, self.state.config.stages)

    def _over_budget(self) -> bool:
        budget = self.state.config.budget
        return budget is not None and self.state.spent >= budget

    # -- the loop
    def run(self) -> EvolveState:
        if self.state.root is None:
            self._make_root()
        for index in range(1, self.state.config.generations + 1):
            generation = self._generation(index)
            if generation.done:
                continue
            for child_id in self._child_ids(generation):
                self._advance(self.state.children[child_id])
                if self.state.status == "budget":
                    return self.state
            generation.done = True
            self._save()
        self.state.status = "done"
        self._save()
        return self.state

    def _make_root(self) -> None:
        existing = self._node_for("root")
        if existing:
            self.state.root = existing.id
            self._save()
            return

        root_dir = self.run_dir / "root" / "scaffold"
        if root_dir.exists():
            shutil.rmtree(root_dir)
        materialize(self.state.config.scaffold, root_dir, library=None)
        self.say(f"evaluating the root scaffold ({self.state.config.scaffold}) on {len(self.stages[-1])} instances")
        outcomes = self._run_eval(f"path:{root_dir}", self.stages[-1], "root")
        ref = self.state.config.scaffold
        node = self.archive.add_node(
            root_dir, parent=ref.partition(":")[2] if ref.startswith("archive:") else None, run=self.state.run_id, suite=self.state.config.suite,
            origin=self.state.config.scaffold, run_key="root", generation=0,
            results={i: o.resolved for i, o in outcomes.items()},
            sessions={i: o.session_dir for i, o in outcomes.items() if o.session_dir},
            gpa=node_gpa({i: o.session_dir for i, o in outcomes.items() if o.session_dir}),
            eval_cost=sum(o.cost for o in outcomes.values()), summary=f"root: {self.state.config.scaffold}",
        )
        self.state.root = node.id
        self._save()
        self.say(f"root {node.id}: {node.resolved}/{len(node.results)} resolved")

    def _node_for(self, key: str) -> Node | None:
        for node in self.archive.nodes():
            if node.run == self.state.run_id and node.run_key == key:
                return node
        return None

    def run_nodes(self) -> list[Node]:
        return [n for n in self.archive.nodes() if n.run == self.state.run_id]

    def candidates(self) -> list[Candidate]:
        attempts: dict[str, int] = {}
        for child in self.state.children.values():
            attempts[child.parent] = attempts.get(child.parent, 0) + 1
        return [Candidate(n.id, n.parent, dict(n.results), attempts.get(n.id, 0)) for n in self.run_nodes()]

    def _generation(self, index: int) -> Generation:
        for generation in self.state.generations:
            if generation.index == index:
                return generation
        rng = random.Random(f"{self.state.config.seed}:{index}")
        parents = select_parents(self.candidates(), self.state.config.children, method=self.state.config.selection,
                                 rng=rng)
        generation = Generation(index=index, parents=parents)
        self.state.generations.append(generation)
        for number, parent in enumerate(parents):
            child_id = f"g{index}c{number}"
            self.state.children[child_id] = ChildRecord(id=child_id, generation=index, parent=parent)
        self._save()
        self.say(f"generation {index}: parents {', '.join(parents)}")
        return generation

    def _child_ids(self, generation: Generation) -> list[str]:
        return [f"g{generation.index}c{n}" for n in range(len(generation.parents))]

    # -- one child
    def _advance(self, child: ChildRecord) -> None:
        while child.status not in TERMINAL:
            if self._over_budget():
                self.state.status = "budget"
                self._save()
                self.say(f"budget of ${self.state.config.budget:.2f} spent (${self.state.spent:.2f}); "
                         "rerun with a larger --budget to continue")
                return
            if child.status == PENDING:
                self._make(child)
            elif child.status == MADE:
                self._gate(child)
            elif child.status == GATED:
                self._stage(child)
            self._save()
        self.say(f"{child.id} (parent {child.parent}): {child.status}"
                 + (f" as {child.node}" if child.node else "") + (f" - {child.reason}" if child.reason else ""))

    def child_dir(self, child: ChildRecord) -> Path:
        return self.run_dir / "children" / child.id

    def _make(self, child: ChildRecord) -> None:
        workdir = self.child_dir(child)
        if workdir.exists():
            shutil.rmtree(workdir)  # a half-made child from a killed run: make it again
        workdir.mkdir(parents=True)
        parent = self.archive.get(child.parent)
        parent_dir = workdir / "parent"
        self.archive.checkout(parent.id, parent_dir)
        task = diagnose(parent.id, parent.results, parent.sessions, set(self.state.selection_split))
        (workdir / "task.md").write_text(task)
        try:
            made = self.improve(parent_dir, task, workdir)
        except Exception as exc:  # noqa: BLE001 - one child's failure never stops the run
            child.status, child.reason = REJECTED, f"the improver failed: {exc.__class__.__name__}: {str(exc)[:300]}"
            return
        child.improve_cost = made.cost
        child.improver_session = made.session_id
        self.state.spent += made.cost
        if made.scaffold_dir != workdir / "scaffold":
            shutil.copytree(made.scaffold_dir, workdir / "scaffold", dirs_exist_ok=True)
        if self.archive.snapshot_tree(workdir / "scaffold") == self.archive.snapshot_tree(parent_dir):
            child.status, child.reason = REJECTED, f"no change to the scaffold (improver ended {made.status})"
        else:
            child.status = MADE

    def _gate(self, child: ChildRecord) -> None:
        workdir = self.child_dir(child)
        problems = check_child(workdir / "parent", workdir / "scaffold")
        if problems:
            child.status, child.reason = REJECTED, "gates: " + summarize(problems)
        else:
            child.status = GATED

    def _stage(self, child: ChildRecord) -> None:
        number = child.stages_passed
        stage = self.state.config.stages[number]
        instances = self.stages[number]
        todo = [i for i in instances if i not in child.results]
        outcomes = self._run_eval(f"path:{self.child_dir(child) / 'scaffold'}", todo, f"{child.id}-s{number + 1}")
        for instance_id, outcome in outcomes.items():
            child.results[instance_id] = outcome.resolved
            if outcome.session_dir:
                child.sessions[instance_id] = outcome.session_dir
            child.eval_cost += outcome.cost
        if not passes(child.results, instances, stage):
            solved = sum(child.results[i] for i in instances)
            child.status = STOPPED
            child.reason = (f"stage {number + 1}: {solved}/{len(instances)} resolved, "
                            f"below the threshold {stage.threshold:.2f}")
            return
        child.stages_passed += 1
        if child.stages_passed == len(self.state.config.stages):
            self._accept(child)

    def _accept(self, child: ChildRecord) -> None:
        node = self._node_for(child.id) or self.archive.add_node(
            self.child_dir(child) / "scaffold", parent=child.parent, run=self.state.run_id,
            suite=self.state.config.suite, origin=f"child of {child.parent}", run_key=child.id,
            generation=child.generation, results=dict(child.results), sessions=dict(child.sessions),
            gpa=node_gpa(child.sessions), eval_cost=child.eval_cost, improve_cost=child.improve_cost,
            task=(self.child_dir(child) / "task.md").read_text()[:20000],
            summary=_change_summary(self.child_dir(child)),
        )
        child.node, child.status = node.id, ACCEPTED

    # -- reporting
    def best(self) -> Node | None:
        nodes = [n for n in self.run_nodes() if n.score is not None]
        return max(nodes, key=lambda n: (n.score, -int(n.id[1:])), default=None)


def node_gpa(sessions: dict[str, str]) -> dict[str, float | None]:
    """Mean Goal-Plan-Action scores of a node's sessions (selection split only: nothing else is run)."""
    return mean_scores(grade_session_dirs(sessions.values()))


def _change_summary(workdir: Path) -> str:
    """Files the child changed relative to its parent, as one line."""
    import filecmp

    changed = []
    parent, child = workdir / "parent", workdir / "scaffold"
    for path in sorted(child.rglob("*")):
        if path.is_file():
            relative = path.relative_to(child)
            before = parent / relative
            if not before.exists():
                changed.append(f"+{relative}")
            elif not filecmp.cmp(before, path, shallow=False):
                changed.append(str(relative))
    for path in sorted(parent.rglob("*")):
        if path.is_file() and not (child / path.relative_to(parent)).exists():
            changed.append(f"-{path.relative_to(parent)}")
    return ("changed " + ", ".join(changed))[:300] if changed else "no file changes"


def outcomes_json(outcomes: dict[str, Outcome]) -> dict[str, Any]:
    return {i: {"resolved": o.resolved, "cost": o.cost, "status": o.status} for i, o in outcomes.items()}
