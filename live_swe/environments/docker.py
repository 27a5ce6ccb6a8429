"""Run commands in one Docker container per session, through one long-lived channel.

The container's main process only waits for its attached stdin to close (Docker's "stdin once"):
when this Python process ends in any way, ``kill -9`` included, the engine closes that stdin, the
container stops, and auto-remove deletes it. ``close()``, an atexit sweep and SIGTERM/SIGHUP
handlers remove it earlier; the ``live-swe=1`` label lets the batch runner find anything left.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shlex
import tarfile
import tempfile
from pathlib import Path

from live_swe.environments import _docker_engine as engine
from live_swe.environments._channel import ChannelCommands
from live_swe.environments._docker_channel import Channel, ChannelLost
from live_swe.environments.base import OUTPUT_CAP_BYTES, EnvironmentError_, Output
from live_swe.environments.local import _SECRET_MARKERS
from live_swe.environments.workers import ExecWorker

remove_leftover_containers = engine.remove_leftover_containers

_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# PID 1: wait until the attached stdin closes (this process is gone), then exit.
_KEEPER = ["bash", "-c", "while read -r _; do :; done"]  # bash reaps orphaned zombies


def _scrub(env: dict[str, str]) -> dict[str, str]:
    return {k: str(v) for k, v in env.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}


class DockerEnvironment(ChannelCommands):
    def __init__(
        self,
        image: str,
        *,
        repo_dir: str = "/testbed",
        copy_repo_from: Path | None = None,
        scaffold_host_dir: Path | None = None,
        scaffold_dir: str = "/opt/live-swe/scaffold",
        labels: dict | None = None,
        env: dict | None = None,
        tools_subdir: str = "tools",
        container_name: str | None = None,
        pull: bool = True,
        host_owner: tuple[int, int] | None = None,
    ):
        self.image = image
        self.repo_dir = repo_dir
        self.scaffold_dir = scaffold_dir if scaffold_host_dir else ""
        # Files the agent writes in the mounted scaffold belong to the container's user (root):
        # a non-root host user could then not roll them back. They are handed back after each command.
        if host_owner is None and os.getuid() != 0:
            host_owner = (os.getuid(), os.getgid())
        self._host_owner = host_owner if self.scaffold_dir else None
        self.container_id = ""
        self._tools_dir = posixpath.join(self.scaffold_dir, tools_subdir) if self.scaffold_dir else ""
        self._channel: Channel | None = None
        self._keeper = None
        self._owner: tuple[int, int] | None = None
        self._client = engine.connect()
        self._api = self._client.api
        info = engine.ensure_image(self._client, image, pull=pull)
        self.container_name = container_name or f"live-swe-{secrets.token_hex(6)}"
        try:
            self._start(info, scaffold_host_dir, labels or {}, env or {})
            if copy_repo_from is not None:
                self._copy_repo(Path(copy_repo_from))
        except BaseException:
            self.close()
            raise

    # -- lifecycle --------------------------------------------------------------------------------

    def _start(self, info: dict, scaffold_host: Path | None, labels: dict, env: dict) -> None:
        docker = engine.import_docker()
        image_env = dict(e.split("=", 1) for e in (info.get("Config") or {}).get("Env") or [] if "=" in e)
        environment = {"PAGER": "cat", "GIT_PAGER": "cat", **_scrub(env)}
        binds = {}
        if scaffold_host is not None:
            host = Path(scaffold_host).resolve()
            host.mkdir(parents=True, exist_ok=True)
            binds[str(host)] = {"bind": self.scaffold_dir, "mode": "rw"}
            environment["LIVE_SWE_SCAFFOLD"] = self.scaffold_dir
            base_path = environment.get("PATH") or image_env.get("PATH") or _DEFAULT_PATH
            environment["PATH"] = f"{self._tools_dir}:{base_path}"
        all_labels = {engine.LABEL: "1", "live-swe.pid": str(os.getpid()), **{k: str(v) for k, v in labels.items()}}
        try:
            created = self._api.create_container(
                self.image,
                entrypoint=_KEEPER,
                name=self.container_name,
                labels=all_labels,
                environment=environment,
                stdin_open=True,  # with detach=False this sets StdinOnce: see the module docstring
                detach=False,
                host_config=self._api.create_host_config(binds=binds, auto_remove=True),
            )
            self.container_id = created["Id"]
            engine.track(self._api, self.container_id)
            self._keeper = self._api.attach_socket(self.container_id, params={"stdin": 1, "stream": 1})
            self._api.start(self.container_id)
        except docker.errors.APIError as exc:
            why = str(exc.explanation or exc)
            hint = " The image needs bash." if "executable file not found" in why else ""
            raise EnvironmentError_(f"could not start a container from {self.image!r}: {why}.{hint}") from None
        except docker.errors.DockerException as exc:
            raise engine.engine_error(exc) from None
        self._channel = self._open_channel()

    def _open_channel(self) -> Channel:
        docker = engine.import_docker()
        try:
            return Channel(self._api, self.container_id, self.repo_dir, output_cap=OUTPUT_CAP_BYTES,
                           tools_dir=self._tools_dir)
        except ChannelLost as exc:
            raise EnvironmentError_(
                f"could not open a shell in the container from {self.image!r}: {exc}. "
                "The image needs bash."
            ) from None
        except docker.errors.APIError as exc:
            raise EnvironmentError_(
                f"the container {self.container_name} is gone or stopped ({exc.explanation or exc}); the session "
                "is saved with its last changes: resume it to go on in a new container"
            ) from None
        except docker.errors.DockerException as exc:
            raise engine.engine_error(exc) from None

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self.container_id:
            try:
                engine.remove_container(self._api, self.container_id)
            except Exception:  # noqa: BLE001 - the label and auto-remove still clean up
                pass
            self.container_id = ""
        if self._keeper is not None:
            try:
                self._keeper.close()
            except OSError:
                pass
            self._keeper = None

    def __enter__(self) -> DockerEnvironment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- commands ---------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Kill the running command, if any (from another thread: the TUI quitting)."""
        channel = self._channel
        if channel is not None and channel.driver_pid:
            self._interrupt(channel.driver_pid)

    def _interrupt(self, driver_pid: int) -> None:
        """Have the driver kill the running command's process group (a side exec, rare)."""
        self.side_command(f"kill -s USR1 {int(driver_pid)}")

    def side_command(self, command: str) -> None:
        """Run a short control command in the container beside the channel (a kill); never raises."""
        try:
            exec_id = self._api.exec_create(self.container_id, ["bash", "-c", command])["Id"]
            self._api.exec_start(exec_id)
        except Exception:  # noqa: BLE001 - the channel then times out and is re-opened
            pass

    def start_python(self, source: str, args: list[str]) -> ExecWorker:
        """``python3 -I -S -B -c SOURCE ARGS`` in the container, found as a login shell finds it
        (``bash -lc``: e.g. a conda environment the image activates in its profile). Prints
        ``LIVE-SWE-NO-PYTHON`` instead where the image has no python3."""
        if not self.container_id:
            raise EnvironmentError_("the docker environment is closed")
        docker = engine.import_docker()
        script = ('command -v python3 >/dev/null 2>&1 || { echo LIVE-SWE-NO-PYTHON; exit 127; }; '
                  'exec python3 -I -S -B -c "$@"')
        try:
            with engine.answering():
                return ExecWorker(self, ["bash", "-lc", script, "live-swe-hooks", source, *args])
        except docker.errors.APIError as exc:
            raise EnvironmentError_(f"the container {self.container_name} is gone or stopped "
                                    f"({exc.explanation or exc})") from None
        except docker.errors.DockerException as exc:
            raise engine.engine_error(exc) from None

    def execute(self, command: str, timeout: float | None = None) -> Output:
        if not self.container_id:
            raise EnvironmentError_("the docker environment is closed")
        with engine.answering():
            return self._execute_on_channel(command, timeout)

    def _interrupt_channel(self, channel: Channel) -> None:
        self._interrupt(channel.driver_pid)

    def _failed_twice(self, exc: ChannelLost) -> str:
        return f"the command channel into {self.container_name} failed twice: {exc}"

    def _after_command(self, channel: Channel) -> None:
        if self._host_owner:
            self._hand_back_scaffold(channel)

    def _hand_back_scaffold(self, channel: Channel) -> None:
        uid, gid = self._host_owner
        try:
            channel.run(f"chown -R {int(uid)}:{int(gid)} {shlex.quote(self.scaffold_dir)} 2>/dev/null; true",
                        30, self._interrupt)
        except ChannelLost:
            pass  # the next command re-opens the channel; ownership is fixed after it

    # -- files ------------------------------------------------------------------------------------

    def _container_owner(self) -> tuple[int, int]:
        if self._owner is None:
            out = self.execute("id -u; id -g", timeout=30)
            numbers = [int(x) for x in out.text.split() if x.isdigit()]
            self._owner = (numbers[0], numbers[1]) if len(numbers) == 2 else (0, 0)
        return self._owner

    def _mkdir(self, path: str) -> None:
        out = self.execute(f"mkdir -p -- {shlex.quote(path)}", timeout=60)
        if out.returncode != 0:
            raise EnvironmentError_(f"could not create {path} in the container: {out.text.strip()[:300]}")

    def _put(self, tar_file, dest_dir: str) -> None:
        docker = engine.import_docker()
        tar_file.seek(0)
        try:
            self._api.put_archive(self.container_id, dest_dir, tar_file)
        except docker.errors.APIError as exc:
            raise EnvironmentError_(f"could not copy files to {dest_dir} in the container: {exc.explanation or exc}") from None

    def _tar(self, entries: list[tuple[Path, str]]):
        """A temporary tar of host paths, owned by the container's user (so git trusts the repo)."""
        uid, gid = self._container_owner()

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
            return info

        spool = tempfile.TemporaryFile()
        with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, name in entries:
                tar.add(str(path), arcname=name, filter=owned)
        return spool

    def _copy_repo(self, repo: Path) -> None:
        if not repo.is_dir():
            raise EnvironmentError_(f"{repo}: repository directory does not exist")
        self.copy_in(repo, self.repo_dir)

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to ``dest`` (a directory's contents merge into ``dest``)."""
        with engine.answering():
            self._copy_in(Path(src), dest)

    def _copy_in(self, src: Path, dest: str) -> None:
        if not src.exists():
            raise EnvironmentError_(f"{src}: nothing to copy into the container")
        if src.is_dir():
            self._mkdir(dest)
            with self._tar([(child, child.name) for child in sorted(src.iterdir())]) as spool:
                self._put(spool, dest)
        else:
            parent = posixpath.dirname(dest.rstrip("/")) or "/"
            self._mkdir(parent)
            with self._tar([(src, posixpath.basename(dest.rstrip("/")))]) as spool:
                self._put(spool, parent)

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy a container file or directory to the host (a directory's contents merge into ``dest``)."""
        with engine.answering():
            self._copy_out(src, dest)

    def _copy_out(self, src: str, dest: Path) -> None:
        docker = engine.import_docker()
        dest = Path(dest)
        try:
            stream, stat = self._api.get_archive(self.container_id, src)
        except docker.errors.NotFound:
            raise EnvironmentError_(f"{src} does not exist in the container") from None
        except docker.errors.APIError as exc:
            raise EnvironmentError_(f"could not copy {src} out of the container: {exc.explanation or exc}") from None
        with tempfile.TemporaryFile() as spool:
            for chunk in stream:
                spool.write(chunk)
            spool.seek(0)
            try:
                with tarfile.open(fileobj=spool, mode="r") as tar:
                    _extract(tar, dest, is_dir=bool(int(stat.get("mode", 0)) & (1 << 31)))
            except tarfile.TarError as exc:  # e.g. a link pointing outside: refused, never followed
                raise EnvironmentError_(f"could not copy {src} out of the container safely: {exc}") from None


def _extract(tar: tarfile.TarFile, dest: Path, *, is_dir: bool) -> None:
    """Extract with the top-level name replaced by ``dest``; the archive is untrusted."""
    members = tar.getmembers()
    if not members:
        return
    top = members[0].name.split("/", 1)[0]
    if not is_dir:
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(members[0])
        if source is None:
            raise EnvironmentError_(f"{top} in the container is not a regular file")
        with source, open(dest, "wb") as target:
            while block := source.read(1 << 20):
                target.write(block)
        return
    dest.mkdir(parents=True, exist_ok=True)
    inner = []
    for member in members:
        name = member.name.split("/", 1)[1] if "/" in member.name else ""
        if not name:
            continue
        member.name = name
        inner.append(member)
    tar.extractall(dest, members=inner, filter="data")


__all__ = ["DockerEnvironment", "remove_leftover_containers"]
