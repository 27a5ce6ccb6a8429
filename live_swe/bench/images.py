"""The Docker images a suite needs: which are present, and building those of local suites.

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

from live_swe.errors import UserError

DEFAULT_BASE = "python:3.11-slim"
BUILD_MANIFEST = "images.json"


@dataclass
class ImageStatus:
    image: str
    present: bool
    instance_ids: list[str] = field(default_factory=list)
    buildable: bool = False  # a local suite knows how to build it


def docker_client():
    """A client for the Docker engine, or a clear error saying how to get one."""
    try:
        import docker
    except ImportError:
        raise UserError("the Docker SDK is not installed: pip install 'live-swe[bench]'") from None
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure here means "no usable engine"
        raise UserError(f"no Docker engine answers ({exc.__class__.__name__}); start Docker (dockerd) and retry") from None
    return client


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


def image_statuses(suite, client, instances=None) -> list[ImageStatus]:
    """One entry per distinct image of ``instances`` (default: the whole suite), in suite order."""
    manifest = build_manifest(suite)
    by_image: dict[str, ImageStatus] = {}
    for instance in instances if instances is not None else suite.instances:
        status = by_image.get(instance.image)
        if status is None:
            status = by_image[instance.image] = ImageStatus(
                instance.image, image_present(client, instance.image), buildable=instance.image in manifest
            )
        status.instance_ids.append(instance.instance_id)
    return list(by_image.values())


def how_to_get(suite, image: str) -> str:
    """What to run so that ``image`` exists (said with every missing-image message)."""
    if image in build_manifest(suite):
        return (f"build it: live-swe bench images {suite.name} --build "
                "[--base IMAGE] (on a machine with no registry: evals/base/build.sh live-swe-base, "
                "then --base live-swe-base)")
    return f"pull it: docker pull {image}"


def missing_images_error(suite, missing: list[ImageStatus]) -> UserError:
    lines = [f"{len(missing)} image(s) of {suite.name} are missing:"]
    for status in missing:
        shown = ", ".join(status.instance_ids[:3]) + (" ..." if len(status.instance_ids) > 3 else "")
        lines.append(f"  {status.image} (for {shown}); {how_to_get(suite, status.image)}")
    return UserError("\n".join(lines))


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
