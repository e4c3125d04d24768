"""The quick `--check`: whether an output folder is up to date, without running the pipeline.

Every commit of a project with mcpmint's pre-commit hooks asks this, so this module imports
nothing of the pipeline's stages: the command line asks it before it imports the pipeline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpmint.config import CONFIG_NAMES, Config
from mcpmint.resources import generator_identity
from mcpmint.write.files import quick_up_to_date

__all__ = ["GenerateOptions", "relative", "run_options", "up_to_date"]


@dataclass(frozen=True)
class GenerateOptions:
    output: Path | None  # None: ./<distribution> in the current folder
    namespace: str | None = None
    check: bool = False
    force: bool = False
    root: Path | None = None  # the folder `$ref`s may reach; default: the spec's own folder
    accept_breaking: bool = False  # write even when the tool surface has breaking changes
    allow_partial: bool = False  # leave out operations that cannot become tools (warnings)


def relative(path: Path, output: Path) -> str:
    """`path` relative to the output folder, as the inputs record names files."""
    return Path(os.path.relpath(path.absolute(), output.absolute())).as_posix()


def run_options(options: GenerateOptions, config: str | None = None) -> dict[str, Any]:
    """The generate options that shape the output, as the inputs fingerprint records them
    (`config`: the project config's path relative to the output folder; its bytes are
    fingerprinted with the spec's files)."""
    # `--allow-partial` only when given: a run without it fails where a partial one left
    # operations out, so the two must not share a record (older records stay valid).
    partial = {"allow_partial": True} if options.allow_partial else {}
    if config is not None:
        return {"namespace": None, "config": config, **partial}
    return {"namespace": options.namespace, **partial}


def up_to_date(spec: Path | Config, options: GenerateOptions) -> bool:
    """Inputs and generated files unchanged since the last run (only files are hashed), and,
    for a run that writes (not `check`), every user-owned file it scaffolded still there
    (for a run from a spec, the project config it scaffolded too, unedited: an edited one is
    what that run warns about). Needs an explicit output folder or a project config; False
    means "run the pipeline"."""
    output = options.output
    if isinstance(spec, Config):
        output = output or spec.folder
        config_file: str | None = relative(spec.path, output)
        spec = spec.source.spec
    elif output is None:
        return False
    else:
        config_file = None
    also_read = () if config_file is None else (config_file,)
    return quick_up_to_date(
        output,
        relative(spec, output),
        run_options(options, config_file),
        generator_identity(),
        also_read,
        scaffolded=not options.check,
        config_options=(
            run_options(options, CONFIG_NAMES[0])
            if config_file is None and not options.check
            else None
        ),
    )
