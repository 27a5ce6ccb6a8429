"""The Docker images a suite needs: which name each instance runs in, which are present, and
building those of local suites.

A SWE-bench instance's image is looked up under every name it goes by, the first present wins: the
row's ``image``, the official Docker Hub name (``swebench/sweb.eval.x86_64.<id, __ as _1776_>:latest``)
and the name upstream ``swebench`` gives a local build (``sweb.eval.x86_64.<id>:latest``). An image
template (``--image-template``) replaces that list with one name of the user's own.

A local suite folder that builds its own images holds a ``Dockerfile`` (build context: the suite
folder) and ``images.json``: ``{image: {"project", "base_commit", "repo_dir"}}``, the build
arguments of each image. Every Dockerfile takes ``ARG BASE`` (default ``python:3.11-slim``); on a
machine with no image registry pass a local base image (``evals/base/build.sh live-swe-base``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from live_swe.bench.suites import SWEBENCH_DATASETS, official_swebench_image
from live_swe.environments import _docker_engine as engine
from live_swe.errors import UserError

DEFAULT_BASE = "python:3.11-slim"
BUILD_MANIFEST = "images.json"
TEMPLATE_FIELDS = ("instance_id", "hub_id", "image")


@dataclass
class ImageStatus:
    image: str  # the name the instances run in: the first present candidate, else the first candidate
    present: bool
    instance_ids: list[str] = field(default_factory=list)
    buildable: bool = False  # a local suite knows how to build it
    candidates: list[str] = field(default_factory=list)  # every name looked up, in order


def docker_client():
    """A client for the Docker engine (slow image pulls and evaluations: a long timeout)."""
    return engine.connect(timeout=600)


def image_present(client, image: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(image)
        return True
    except ImageNotFound:
        return False


def build_manifest(suite) -> dict[str, dict]:
    """``images.json`` of a local suite (empty for suites whose images come from a registry)."""
    directory = suite_dir(suite)
    if directory is None or not (directory / BUILD_MANIFEST).is_file():
        return {}
    path = directory / BUILD_MANIFEST
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON ({exc.msg}); regenerate it with make_instances.py") from None
    return data


def suite_dir(suite) -> Path | None:
    if suite.kind != "local":
        return None
    return Path(suite.source)


def local_build_image(instance_id: str) -> str:
    """The name upstream ``swebench`` gives an instance image it builds here (no registry namespace)."""
    return f"sweb.eval.x86_64.{instance_id}:latest".lower()


def check_template(template: str) -> str:
    """An image template names its fields in braces; anything else is refused now, not per instance."""
    import string

    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise UserError(f"--image-template {template!r}: {exc}; write e.g. 'sweb.eval.x86_64.{{instance_id}}:latest'") from None
    unknown = [name for name in fields if name not in TEMPLATE_FIELDS]
    if unknown or not fields:
        raise UserError(f"--image-template {template!r}: use the fields {{instance_id}} (the id, lower case), "
                        "{hub_id} (lower case, '__' as '_1776_', as on Docker Hub) or {image} (the row's image)"
                        + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return template


def image_candidates(instance, template: str | None = None) -> list[str]:
    """Every name ``instance``'s image may go by, in the order they are looked up."""
    if template:
        lower = instance.instance_id.lower()
        return [check_template(template).format(instance_id=lower, hub_id=lower.replace("__", "_1776_"),
                                                image=instance.image)]
    if instance.suite_kind != "swebench":
        return [instance.image]
    names = [instance.image, official_swebench_image(instance.instance_id), local_build_image(instance.instance_id)]
    return list(dict.fromkeys(names))


def image_statuses(suite, client, instances=None, template: str | None = None) -> list[ImageStatus]:
    """One entry per distinct image of ``instances`` (default: the whole suite), in suite order."""
    manifest = build_manifest(suite)
    present: dict[str, bool] = {}

    def is_present(name: str) -> bool:
        if name not in present:
            present[name] = image_present(client, name)
        return present[name]

    by_image: dict[str, ImageStatus] = {}
    for instance in instances if instances is not None else suite.instances:
        candidates = image_candidates(instance, template)
        image = next((name for name in candidates if is_present(name)), candidates[0])
        status = by_image.get(image)
        if status is None:
            status = by_image[image] = ImageStatus(image, is_present(image), buildable=image in manifest,
                                                   candidates=candidates)
        status.instance_ids.append(instance.instance_id)
    return list(by_image.values())


def instance_images(statuses: list[ImageStatus]) -> dict[str, str]:
    """instance id -> the image it runs in."""
    return {instance_id: status.image for status in statuses for instance_id in status.instance_ids}


def how_to_get(suite, image: str, status: ImageStatus | None = None) -> str:
    """What to run so that ``image`` exists (said with every missing-image message)."""
    if image in build_manifest(suite):
        return (f"build it: live-swe bench images {suite.name} --build "
                "[--base IMAGE] (on a machine with no registry: evals/base/build.sh live-swe-base, "
                "then --base live-swe-base)")
    if suite.kind == "local":
        return (f"it is not in {suite_dir(suite) / BUILD_MANIFEST}, so `live-swe bench images {suite.name} --build` "
                "cannot build it: build or load it yourself")
    candidates = status.candidates if status is not None else [image]
    hub = next((name for name in candidates if name.startswith("swebench/sweb.eval.")), None)
    if hub is None or status is None or len(status.instance_ids) != 1:
        return f"pull it: docker pull {image}"
    instance_id = status.instance_ids[0]
    dataset = SWEBENCH_DATASETS.get(suite.name.partition(":")[0], ("DATASET",))[0]
    return (f"pull it: docker pull {hub}; or build it with upstream swebench "
            f"(python -m swebench.harness.prepare_images --dataset_name {dataset} --instance_ids {instance_id}; "
            f"swebench 5: swebench images build TASK_REPO -i {instance_id}), which names it "
            f"{local_build_image(instance_id)}, found as is; images named otherwise: --image-template")


def missing_images_error(suite, missing: list[ImageStatus]) -> UserError:
    lines = [f"{len(missing)} image(s) of {suite.name} are missing:"]
    lines += missing_image_lines(suite, missing)
    return UserError("\n".join(lines))


def missing_image_lines(suite, missing: list[ImageStatus]) -> list[str]:
    lines = []
    for status in missing:
        shown = ", ".join(status.instance_ids[:3]) + (" ..." if len(status.instance_ids) > 3 else "")
        lines.append(f"  {status.image} (for {shown}); {how_to_get(suite, status.image, status)}")
    return lines


def build_images(
    suite,
    client,
    images: list[str],
    *,
    base: str = DEFAULT_BASE,
    on_line: Callable[[str], None] | None = None,
) -> list[str]:
    """Build ``images`` of a local suite from its Dockerfile; returns the images built."""
    directory = suite_dir(suite)
    manifest = build_manifest(suite)
    if directory is None or not manifest:
        raise UserError(f"{suite.name} has no Dockerfile and {BUILD_MANIFEST} to build from; "
                        "only local suites build their images (others are pulled)")
    unknown = [image for image in images if image not in manifest]
    if unknown:
        raise UserError(f"{suite.name}: {directory / BUILD_MANIFEST} does not describe {', '.join(unknown)}")
    built = []
    for image in images:
        spec = manifest[image]
        args = {"BASE": base, "PROJECT": spec["project"], "BASE_COMMIT": spec["base_commit"],
                "REPO_DIR": spec.get("repo_dir", "/testbed")}
        _build_one(client, directory, image, args, on_line)
        built.append(image)
    return built


def _build_one(client, directory: Path, image: str, args: dict[str, str], on_line) -> None:
    from docker.errors import APIError, BuildError

    log: list[str] = []
    try:
        for chunk in client.api.build(path=str(directory), dockerfile="Dockerfile", tag=image,
                                      buildargs=args, rm=True, forcerm=True, decode=True):
            text = chunk.get("stream") or chunk.get("status") or ""
            if text.strip():
                log.append(text.rstrip())
                if on_line:
                    on_line(text.rstrip())
            if "error" in chunk:
                raise BuildError(chunk["error"], log)
    except (BuildError, APIError) as exc:
        tail = "\n".join(log[-15:])
        hint = ""
        if args["BASE"] == DEFAULT_BASE and not image_present(client, DEFAULT_BASE):
            hint = (f"\n{DEFAULT_BASE} is not on this machine and may not be pullable here; build a local "
                    "base with evals/base/build.sh live-swe-base and pass --base live-swe-base")
        raise UserError(f"building {image} failed: {getattr(exc, 'msg', exc)}\n{tail}{hint}") from None
    if not image_present(client, image):
        raise UserError(f"building {image} reported success but the image is not there")
