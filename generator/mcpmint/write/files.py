"""The only stage that touches the output folder.

Ownership (DESIGN.md section 5): generated files are listed with their sha256 in
`.mcpmint/manifest.json` and rewritten on every run, unless a hand edit is detected, which is
refused without `force`. Scaffold files belong to the user and are written only when missing.
Stale generated files are removed only when unmodified. Every change is staged first and
applied with a rollback, so a failed run leaves the previous tree exactly as it was.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from mcpmint.config import CONFIG_NAMES
from mcpmint.diagnostics import DiagnosticSink

if TYPE_CHECKING:  # the quick check (quickcheck.py) imports this module, and not these
    from mcpmint.render.templates import FileTree
    from mcpmint.write.lock import Change

MANIFEST = ".mcpmint/manifest.json"
T = TypeVar("T")


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    scaffolded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    diffs: dict[str, str] = field(default_factory=dict)
    output: Path | None = None
    lock_changes: list[Change] = field(default_factory=list)  # against the previous lock
    blocked: bool = False  # breaking changes without acceptance: nothing was written
    quick: bool = False  # `check` answered from the inputs fingerprint alone
    # The written package's `tools.json` document without its tools (for what to do next).
    catalog: Mapping[str, Any] | None = None

    @property
    def changed(self) -> bool:
        return bool(self.written or self.scaffolded or self.removed)


def _escapes(target: Path, root: Path) -> bool:
    """True when writing `target` would follow a link or land outside `root` (G8)."""
    if target.is_symlink():
        return True
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    resolved = parent.resolve()
    return resolved != root and not str(resolved).startswith(str(root) + os.sep)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def safe_relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not PurePosixPath(path).is_absolute() and ".." not in parts


def _same_files(current: str, text: str) -> bool:
    """Two manifests that list the same generated files with the same hashes."""
    try:
        return bool(json.loads(current)["files"] == json.loads(text)["files"])
    except (ValueError, KeyError, TypeError):
        return False


def _read_manifest(out: Path, sink: DiagnosticSink) -> dict[str, str] | None:
    manifest = out / MANIFEST
    if not manifest.is_file():
        return {}
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not an object")
        return {str(k): str(v) for k, v in files.items()}
    except (ValueError, KeyError, TypeError) as exc:
        sink.error(str(manifest), f"unreadable manifest: {exc}", "restore it from version control")
        return None


def manifest_text(
    generated: Mapping[str, str],
    inputs: Mapping[str, Any] | None = None,
    scaffold: Iterable[str] = (),
) -> str:
    return _manifest({path: sha256(text) for path, text in generated.items()}, inputs, scaffold)


def _manifest(
    hashes: Mapping[str, str], inputs: Mapping[str, Any] | None, scaffold: Iterable[str]
) -> str:
    """The manifest: the generated files and their hashes, the record of the inputs, and the
    user-owned files a run writes when they are missing (`scaffold`: the quick check of a
    plain `generate` needs them all present, or the run would write one). The project config
    a spec run scaffolds is not listed: a run from it reads it, so both runs list the same
    files (their manifests must be the same bytes, or the pre-commit hook would stop the
    first commit after `generate SPEC -o DIR` for it)."""
    data: dict[str, Any] = {"generator": "mcpmint", "files": dict(sorted(hashes.items()))}
    if inputs is not None:
        data["inputs"] = dict(inputs)
    data["scaffold"] = sorted(path for path in scaffold if path not in CONFIG_NAMES)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def inputs_fingerprint(
    spec: str, files: Mapping[str, str], options: Mapping[str, Any], version: str
) -> dict[str, Any]:
    """What a run read and how it was asked: `spec` and the keys of `files` are POSIX paths
    relative to the output folder, `files` maps them to the sha256 of their bytes."""
    data: dict[str, Any] = {
        "spec": spec,
        "files": dict(sorted(files.items())),
        "options": dict(sorted(options.items())),
        "mcpmint": version,
    }
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    data["fingerprint"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return data


def file_sha256(path: Path) -> str:
    return _sha256(path.read_bytes())


def _current(target: Path) -> bytes:
    """A file's bytes as the write stage compares them: with universal newlines, as reading
    it as text would (a checkout may have turned the generated LF into CRLF). Bytes, not
    text: the tree is encoded once, and neither side is decoded."""
    data = target.read_bytes()
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def quick_up_to_date(
    out: Path,
    spec: str,
    options: Mapping[str, Any],
    version: str,
    also_read: tuple[str, ...] = (),
    *,
    scaffolded: bool = False,
    config_options: Mapping[str, Any] | None = None,
) -> bool:
    """True when `out` was generated from exactly these inputs and no generated file changed
    since: the inputs fingerprint is recomputed by hashing the input files only (nothing is
    loaded, validated or rendered). `also_read`: input files this run reads besides the ones
    the record lists (a project config, when the record is a spec run's). The record matches
    when its fingerprint is this run's, or its `from_config` is (`record_from_config`).
    False means "unknown": run the whole pipeline. `scaffolded`: also every user-owned file
    the last run scaffolded is there (a run that writes would write a missing one).
    `config_options`: a run from a spec that writes, and the options of the run of the project
    config it scaffolds: that config must be in `out` with the bytes it was scaffolded with
    (the record's `from_config` matches with its hash), or the run would write it back, or
    warn that an edited one is ignored."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        recorded = data["inputs"]
        files = data["files"]
        if recorded["spec"] != spec or not isinstance(files, dict):
            return False
        if scaffolded and not all(
            safe_relative(path) and os.path.lexists(out / path) for path in data["scaffold"]
        ):
            return False
        read = list(dict.fromkeys([*recorded["files"], *also_read]))
        for path in files:
            if not safe_relative(path) or (out / path).is_symlink():
                return False
        # The inputs first: when they changed (a regeneration to come), the generated files
        # need not be read.
        read_hashes = dict(zip(read, sha256_each([out / path for path in read]), strict=True))
        digest = inputs_fingerprint(spec, read_hashes, options, version)
        if digest["fingerprint"] not in (recorded["fingerprint"], recorded.get(FROM_CONFIG)):
            return False
        if config_options is not None:
            config = out / CONFIG_NAMES[0]
            if config.is_symlink() or not config.is_file():
                return False
            read_hashes[CONFIG_NAMES[0]] = file_sha256(config)
            scaffolded_run = inputs_fingerprint(spec, read_hashes, config_options, version)
            if scaffolded_run["fingerprint"] != recorded.get(FROM_CONFIG):
                return False
        return sha256_each([out / path for path in files]) == list(files.values())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def sha256_each(paths: list[Path]) -> list[str]:
    """`file_sha256` of each path, in order."""
    return [file_sha256(path) for path in paths]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# The inputs record's key for the fingerprint of the run of the project config a spec run
# scaffolds (`mcpmint generate` inside the output folder): the same inputs, the same tree.
FROM_CONFIG = "from_config"


def record_from_config(
    inputs: Mapping[str, Any], config: str, config_text: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """A spec run's inputs record (`inputs_fingerprint`), with the fingerprint the run of the
    project config it scaffolds would have: `config` (its path relative to the output folder)
    read too, holding `config_text`, and that run's `options`. Right after `generate SPEC -o
    DIR`, the pre-commit hook's `mcpmint generate --check` of DIR/mcpmint.yaml is then the
    quick check, not a whole run; once the config is edited its hash no longer matches."""
    files = {**inputs["files"], config: sha256(config_text)}
    other = inputs_fingerprint(inputs["spec"], files, options, inputs["mcpmint"])
    return {**inputs, FROM_CONFIG: other["fingerprint"]}


def recorded_inputs(out: Path) -> dict[str, Any] | None:
    """The inputs record of `out`'s manifest, or None when there is none (or it is unreadable:
    the write stage reports the manifest itself)."""
    try:
        recorded = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return recorded if isinstance(recorded, dict) else None


def plan(
    tree: FileTree,
    out: Path,
    *,
    force: bool,
    sink: DiagnosticSink,
    inputs: Mapping[str, Any] | None = None,
) -> tuple[dict[str, bytes], list[str], WriteReport]:
    """Decide what to write (the bytes, by path) and remove; report refusals as errors in
    `sink`.

    Each generated file is encoded once, hashed for the manifest and compared with the bytes
    on disk (compared as bytes: nothing on disk needs decoding unless it differs)."""
    report = WriteReport()
    previous = _read_manifest(out, sink)
    if previous is None:
        return {}, [], report
    writes: dict[str, bytes] = {}
    for path in sorted({*tree.generated, *tree.scaffold}):
        if not safe_relative(path):
            sink.error(path, "refusing to write outside the output folder")
            return {}, [], report
    root = out.resolve() if out.exists() else out.absolute()

    def decide(path: str, text: str | None, data: bytes) -> None:
        target = out / path
        if out.exists() and _escapes(target, root):
            sink.error(
                str(target),
                "refusing to write through a symbolic link or outside the output folder",
                "remove the link; generated files are always real files inside the output folder",
            )
            return
        if not target.exists():
            writes[path] = data
            report.written.append(path)
            return
        current = _current(target)
        if current == data:
            report.unchanged.append(path)
            return
        if path == MANIFEST and text is not None and _same_files(_text(current), text):
            # Only the record of the inputs differs: the same tree reached another way (from
            # the spec, then from the mcpmint.yaml that run wrote). The output is up to date;
            # a run that writes refreshes the record quietly, `--check` passes.
            report.unchanged.append(path)
            writes[path] = data
            return
        owned = path in previous or path == MANIFEST
        edited = owned and path != MANIFEST and _sha256(current) != previous[path]
        if (edited or not owned) and not force:
            report.refused.append(path)
            report.diffs[path] = _diff(path, _text(current), _text(data) if text is None else text)
            why = "was edited by hand" if edited else "exists but was not written by mcpmint"
            sink.error(
                str(target),
                f"generated file {why}; refusing to overwrite it",
                "move the change into hooks.py, auth.py or an override in mcpmint.yaml, "
                "then run again; or pass --force to overwrite it",
            )
            return
        writes[path] = data
        report.written.append(path)

    hashes: dict[str, str] = {}
    for path, text in sorted(tree.generated.items()):
        data = text.encode("utf-8")
        hashes[path] = _sha256(data)
        decide(path, text, data)
    manifest = _manifest(hashes, inputs, tree.scaffold)  # the files' hashes are known only now
    decide(MANIFEST, manifest, manifest.encode("utf-8"))
    for listed in (report.written, report.unchanged, report.refused):
        listed.sort()  # in the order of their paths, the manifest's among them
    for path in sorted(set(previous) - {*tree.generated, MANIFEST}):
        target = out / path
        if not target.is_file():
            continue
        if _sha256(_current(target)) != previous[path] and not force:
            sink.warning(
                str(target),
                "no longer generated, but edited by hand: left in place",
                "delete it yourself once its changes live elsewhere",
            )
            continue
        report.removed.append(path)
    for path, text in sorted(tree.scaffold.items()):
        if out.exists() and _escapes(out / path, root):
            sink.error(str(out / path), "refusing to write through a symbolic link")
            continue
        if not (out / path).exists() and not (out / path).is_symlink():
            writes[path] = text.encode("utf-8")
            report.scaffolded.append(path)
    return writes, report.removed, report


def write_tree(
    tree: FileTree,
    out: Path,
    *,
    check: bool = False,
    force: bool = False,
    sink: DiagnosticSink,
    inputs: Mapping[str, Any] | None = None,
    _fault: Callable[[str], None] | None = None,
) -> WriteReport:
    """Bring `out` in line with `tree`. With `check`, only report what would change.

    `inputs` (see `inputs_fingerprint`) is recorded in the manifest for quick checks.
    `_fault` is called before each file is put in place; tests use it to inject a failure in
    the middle of a run.
    """
    writes, removals, report = plan(tree, out, force=force, sink=sink, inputs=inputs)
    if check or sink.has_errors:
        return report
    if not writes and not removals:
        return report
    if not out.exists():
        _create_fresh(out, writes, _fault)
        return report
    _apply(out, writes, removals, _fault)
    return report


def _create_fresh(
    out: Path, writes: Mapping[str, bytes], fault: Callable[[str], None] | None
) -> None:
    """A new folder appears whole or not at all: build it beside, then rename it into place."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for path, data in writes.items():
            if fault:
                fault(path)
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _apply(
    out: Path,
    writes: Mapping[str, bytes],
    removals: list[str],
    fault: Callable[[str], None] | None,
) -> None:
    """Stage every new file, then swap each in, keeping backups to roll back on any failure."""
    work = Path(tempfile.mkdtemp(prefix="run-", dir=_ensure(out / ".mcpmint")))
    staged, backup = work / "staged", work / "backup"
    done: list[tuple[str, bool]] = []  # (path, had a previous version)
    try:
        for path, data in writes.items():
            target = staged / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        # The manifest goes last: until it is in place, the previous one still describes the tree.
        order = sorted(writes, key=lambda p: p == MANIFEST)
        for path in [*order, *removals]:
            if fault:
                fault(path)
            target = out / path
            existed = target.exists()
            if existed:
                saved = backup / path
                saved.parent.mkdir(parents=True, exist_ok=True)
                _keep(target, saved)
            done.append((path, existed))
            if path in writes:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged / path, target)
            else:
                target.unlink()
                _prune_empty(target.parent, out)
    except BaseException:
        for path, existed in reversed(done):
            target = out / path
            if existed:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(backup / path, target)
            elif target.exists():
                target.unlink()
                _prune_empty(target.parent, out)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
        _prune_empty(out / ".mcpmint", out)


def _keep(target: Path, saved: Path) -> None:
    """Keep `target`'s current version at `saved` for a roll-back: a second link to the same
    file (the swap that follows puts a new file at `target`, it never writes into this one),
    or a copy where links are not possible (a copy of a large tree's files is slow)."""
    try:
        os.link(target, saved)
    except OSError:
        shutil.copy2(target, saved)


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _prune_empty(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _diff(path: str, current: str, new: str) -> str:
    lines = difflib.unified_diff(
        new.splitlines(keepends=True),
        current.splitlines(keepends=True),
        fromfile=f"{path} (generated)",
        tofile=f"{path} (on disk)",
        n=2,
    )
    return "".join(list(lines)[:200])
