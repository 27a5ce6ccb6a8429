"""The tree-sitter repository map: definitions and references, ranking, the token budget, the
per-file cache, the languages, and the first message of a real run."""

from __future__ import annotations

import os
import shutil

from conftest import SUBMIT, make_git_repo

from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.repomap import RepoMapper, build_repo_map, estimate_tokens
from live_swe.repomap.tags import extract_tags
from live_swe.resources import resource_path
from live_swe.runner import RunHooks, RunRequest, start_run

CORE = '''"""Core arithmetic."""

RATE = 3


class Invoice:
    def compute_total(self, items):
        return sum(items) * RATE


def parse_amount(text):
    return float(text)


def _private_helper():
    return 1
'''


def users(n: int) -> dict[str, str]:
    return {f"app/user_{i}.py": f"from core import Invoice, parse_amount\n\n\ndef handle_{i}(raw):\n"
                                f"    return Invoice().compute_total([parse_amount(raw)])\n" for i in range(n)}


def test_tags_of_python_javascript_and_bash():
    py = extract_tags(CORE.encode(), "python")
    assert [(d[0], d[1], d[2]) for d in py.defs] == [
        ("RATE", "constant", 3), ("Invoice", "class", 6), ("compute_total", "function", 7),
        ("parse_amount", "function", 11), ("_private_helper", "function", 15)]
    assert py.defs[1][3] == "class Invoice:" and py.defs[2][3] == "    def compute_total(self, items):"
    assert py.refs["sum"] == 1 and py.refs["RATE"] == 1 and "Invoice" not in py.refs  # a definition is no use

    js = extract_tags(b"class Cart { total() { return sum(this.items); } }\n"
                      b"function sum(xs) { return xs.reduce((a, b) => a + b, 0); }\n"
                      b"const fmt = (x) => x.toFixed(2);\n", "javascript")
    assert {(d[0], d[1]) for d in js.defs} == {("Cart", "class"), ("total", "method"), ("sum", "function"),
                                              ("fmt", "function")}
    assert js.refs["reduce"] == 1

    sh = extract_tags(b"build() {\n  make all\n}\nbuild\ndeploy_now\n", "bash")
    assert [(d[0], d[2]) for d in sh.defs] == [("build", 1)]
    assert sh.refs == {"make": 1, "build": 1, "deploy_now": 1}


def test_most_referenced_definitions_come_first_within_the_budget(tmp_path):
    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, "lonely.py": "def unused_thing():\n    pass\n",
                                          **users(6)})
    result = build_repo_map(repo, "", token_budget=1024, cache_dir=tmp_path / "cache")
    assert result.files == 8 and result.parsed == 8
    lines = result.text.splitlines()
    assert lines[0] == "app/user_0.py:" or "core.py:" in lines
    core = result.text.split("core.py:\n", 1)[1]
    assert "    7│    def compute_total(self, items):" in core and "    6│class Invoice:" in core
    # nothing refers to it: it comes after every referenced definition, so only because the budget allows
    assert result.text.endswith("lonely.py:\n    1│def unused_thing():")
    assert result.tokens <= 1024

    small = build_repo_map(repo, "", token_budget=25, cache_dir=tmp_path / "cache")
    assert 0 < small.tokens <= 25 and small.shown < result.shown
    assert "compute_total" in small.text or "Invoice" in small.text  # the best ranked survive
    assert "unused_thing" not in small.text
    assert build_repo_map(repo, "", token_budget=0, cache_dir=tmp_path / "cache").text == ""


def test_the_task_pulls_in_what_it_mentions(tmp_path):
    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, "lonely.py": "def unused_thing():\n    pass\n",
                                          **users(6)})
    plain = build_repo_map(repo, "", token_budget=40, cache_dir=tmp_path / "cache")
    assert "unused_thing" not in plain.text
    focused = build_repo_map(repo, "unused_thing crashes in lonely.py", token_budget=40, cache_dir=tmp_path / "cache")
    assert "lonely.py:\n    1│def unused_thing():" in focused.text


def test_per_file_cache_reparses_only_changed_files(tmp_path, live_swe_home):
    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, **users(4)})
    first = RepoMapper(repo).build("", 512)
    assert first.parsed == 5
    caches = list((live_swe_home / "cache" / "repomap").glob("*.json"))
    assert len(caches) == 1  # one cache file per repository, under LIVE_SWE_HOME
    assert RepoMapper(repo).build("", 512).parsed == 0
    (repo / "app/user_0.py").write_text("def brand_new_function():\n    return 1\n")
    (repo / "extra.py").write_text("from app.user_0 import brand_new_function\nbrand_new_function()\n")
    again = RepoMapper(repo).build("brand_new_function", 512)
    assert again.parsed == 2 and again.files == 6
    assert "brand_new_function" in again.text
    os.remove(repo / "extra.py")
    assert RepoMapper(repo).build("", 512).files == 5


def test_minified_and_untracked_ignored_files_are_left_out_and_plain_directories_work(tmp_path):
    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, ".gitignore": "build_out/\n", **users(3)})
    (repo / "bundle.min.js").write_text("function a(){return 1};" * 400)
    (repo / "build_out").mkdir()
    (repo / "build_out" / "gen.py").write_text("def generated():\n    pass\n")
    result = build_repo_map(repo, "", 1024, cache_dir=tmp_path / "c")
    assert result.files == 5  # core, 3 users, the bundle (read but empty); build_out/ is ignored
    assert "bundle.min.js" not in result.text and "generated" not in result.text
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    assert "compute_total" in build_repo_map(plain, "", 1024, cache_dir=tmp_path / "c2").text


def test_estimate_tokens():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


def run_once(repo, tmp_path, scaffold_ref="seed"):
    model = ScriptedModel([Reply(SUBMIT)])
    request = RunRequest(task="Invoice.compute_total is wrong", model="scripted:test", repo=repo,
                         scaffold_ref=scaffold_ref)
    result = start_run(request, RunHooks(model_factory=lambda name: model))
    return result, model.seen[0][1]["content"]


def test_the_first_message_of_a_run_carries_the_map_and_the_scaffold_can_switch_it_off(tmp_path):
    from live_swe.session.store import SessionStore

    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, **users(3)})
    result, first = run_once(repo, tmp_path)
    assert "<repo_map>" in first and "    7│    def compute_total(self, items):" in first
    [event] = [e for e in SessionStore.default().open(result.session_id).events()[0] if e["t"] == "repo_map"]
    assert event["files"] == 4 and event["tokens"] <= 1024

    scaffold = tmp_path / "no-map"
    shutil.copytree(resource_path("scaffold"), scaffold)
    shutil.copytree(resource_path("prompts"), scaffold / "prompts")
    policy = (scaffold / "scaffold.yaml").read_text()
    (scaffold / "scaffold.yaml").write_text(policy.replace("repo_map:\n  enabled: true", "repo_map:\n  enabled: false"))
    _, first = run_once(repo, tmp_path, scaffold_ref=f"path:{scaffold}")
    assert "<repo_map>" not in first and "def compute_total" not in first


def _reference_edges(tags, files, definers, mentioned_names):
    """(src, dst, name) -> weight: each file's references to the files that define the name."""
    import math

    from live_swe.repomap.rank import MAX_DEFINERS, MENTION_FACTOR, MIN_LINK_CHARS, name_weight

    edges = {}
    for src in files:
        for name, uses in tags[src].refs.items():
            where = definers.get(name, [])
            if not where or len(where) > MAX_DEFINERS or len(name) < MIN_LINK_CHARS:
                continue
            weight = name_weight(name, len(where)) * math.sqrt(uses) * (MENTION_FACTOR if name in mentioned_names else 1)
            for dst in where:
                if dst != src:
                    edges[(src, dst, name)] = weight
    return edges


def reference_ranking(tags, mentioned_names, mentioned_files, iterations=30, damping=0.85):
    """The ranking spelled out with dicts and loops, to check the vectorised graph against."""

    from live_swe.repomap.rank import MAX_DEFINERS

    files = sorted(tags)
    definers = {}
    for rel in files:
        for name in dict.fromkeys(d[0] for d in tags[rel].defs):
            definers.setdefault(name, []).append(rel)
    edges = _reference_edges(tags, files, definers, mentioned_names)
    out = {rel: sum(w for (s, _d, _n), w in edges.items() if s == rel) for rel in files}
    chosen = set(mentioned_files) | {rel for name in mentioned_names for rel in definers.get(name, [])[:MAX_DEFINERS]}
    teleport = {rel: (1 / len(chosen) if rel in chosen else 0.0) if chosen else 1 / len(files) for rel in files}
    ranks = dict(teleport)
    for _ in range(iterations):
        dangling = sum(ranks[rel] for rel in files if not out[rel])
        new = {rel: (1 - damping + damping * dangling) * teleport[rel] for rel in files}
        for (s, d, _n), w in edges.items():
            new[d] += damping * ranks[s] * w / out[s]
        ranks = new
    scores = {}
    for (s, d, n), w in edges.items():
        scores[(d, n)] = scores.get((d, n), 0.0) + ranks[s] / out[s] * w
    for name in mentioned_names:
        for rel in definers.get(name, [])[:MAX_DEFINERS]:
            scores[(rel, name)] = scores.get((rel, name), 0.0) + 1.0
    ranked = sorted(((score, rel, name) for (rel, name), score in scores.items()), key=lambda t: (-t[0], t[1], t[2]))
    rest = {(rel, name) for name, where in definers.items() for rel in where[:MAX_DEFINERS]} - set(scores)
    return ranked + [(0.0, rel, name) for rel, name in sorted(rest)]


def test_the_ranking_matches_the_algorithm_written_out_plainly(tmp_path):
    from live_swe.repomap.rank import rank_definitions

    files = {"core.py": CORE, "lonely.py": "def unused_thing():\n    pass\n", **users(5),
             "app/report.py": "from core import parse_amount, RATE\n\ndef report():\n    return parse_amount('1') + RATE\n",
             "app/util.py": "def parse_amount(x):\n    return x\n\ndef _helper():\n    return report()\n"}
    repo = make_git_repo(tmp_path / "r", files)
    tags, _ = RepoMapper(repo, cache_dir=tmp_path / "c").tags()
    for names, mentioned in [(set(), set()), ({"report", "unused_thing", "nothing_here"}, {"app/user_1.py"})]:
        expected = reference_ranking(tags, names, mentioned)
        got = rank_definitions(tags, names, mentioned)
        assert [(rel, name) for _s, rel, name in got] == [(rel, name) for _s, rel, name in expected]
        assert [round(s, 9) for s, _r, _n in got] == [round(s, 9) for s, _r, _n in expected]


def test_a_warm_map_reuses_the_saved_graph_and_matches_the_cold_one(tmp_path):
    from live_swe.repomap.mapper import render
    from live_swe.repomap.rank import RefGraph

    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, "lonely.py": "def unused_thing():\n    pass\n", **users(6)})
    cache = tmp_path / "cache"
    cold = build_repo_map(repo, "unused_thing breaks in lonely.py", 25, cache_dir=cache)
    [graph_file] = cache.glob("*.graph.npz")
    saved = graph_file.stat().st_mtime_ns
    warm = RepoMapper(repo, cache_dir=cache).build("unused_thing breaks in lonely.py", 25)
    assert (warm.text, warm.shown, warm.parsed) == (cold.text, cold.shown, 0)
    assert graph_file.stat().st_mtime_ns == saved  # loaded, not rebuilt
    other = RepoMapper(repo, cache_dir=cache).build("", 25)  # another task: same graph, another ranking
    assert graph_file.stat().st_mtime_ns == saved and other.text != warm.text

    # the map is the longest prefix of the ranking that fits: one more definition would not
    mapper = RepoMapper(repo, cache_dir=cache)
    current, _ = mapper.refresh()
    ranked = [(rel, name) for _s, rel, name in mapper.graph(current).rank({"unused_thing", "breaks"}, {"lonely.py"})]
    assert 0 < warm.shown < len(ranked)
    assert render(ranked[:warm.shown], mapper.cache.tags) == warm.text
    assert estimate_tokens(render(ranked[:warm.shown + 1], mapper.cache.tags)) > 25

    graph_file.write_bytes(b"not a zip archive")  # damaged: rebuilt, same map
    assert RepoMapper(repo, cache_dir=cache).build("unused_thing breaks in lonely.py", 25).text == cold.text
    assert RefGraph.load(graph_file, "some other state of the files") is None


def test_names_count_as_mentioned_when_they_look_like_code():
    from live_swe.repomap.mapper import mentions

    files = ["django/db/models/query.py", "lonely.py", "core.py"]
    names, mentioned = mentions("QuerySet.filter() with a Q object on a related field raises FieldError in "
                                "django/db/models/query.py", files)
    assert names == {"QuerySet", "filter", "FieldError"}  # not field, raises, django, models, query
    assert mentioned == {"django/db/models/query.py"}
    assert mentions("Invoice.total is wrong; see `parse` and obj.run in core.py", files) == (
        {"Invoice", "total", "parse", "run"}, {"core.py"})
    assert mentions("unused_thing crashes in lonely.py", files) == ({"unused_thing"}, {"lonely.py"})


def test_vendored_and_small_minified_files_stay_out_of_the_map(tmp_path):
    repo = make_git_repo(tmp_path / "r", {
        "core.py": CORE, **users(2),
        "static/vendor/lib.js": "function vendoredHelper(a) { return a; }\nvendoredHelper(1);\n",
        "static/i18n/bs.js": "!function(){var longName_" + "x" * 600 + "=function(e){return e};}();",
    })
    result = build_repo_map(repo, "", 1024, cache_dir=tmp_path / "c")
    assert result.files == 4 and "vendoredHelper" not in result.text and "bs.js" not in result.text


def test_an_unwritable_or_corrupt_cache_costs_speed_not_the_map(tmp_path):
    repo = make_git_repo(tmp_path / "r", {"core.py": CORE, **users(3)})
    expected = build_repo_map(repo, "", 512, cache_dir=tmp_path / "fresh").text
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    result = build_repo_map(repo, "", 512, cache_dir=blocked)
    assert result.text == expected and result.parsed == 4
    [tag_file] = (tmp_path / "fresh").glob("*[0-9a-f].json")
    tag_file.write_text('{"version": 3, "files": {"core.py": [1, 2, "not tags"]}')  # truncated mid-write
    again = build_repo_map(repo, "", 512, cache_dir=tmp_path / "fresh")
    assert again.text == expected and again.parsed == 4
