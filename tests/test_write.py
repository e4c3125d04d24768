"""The write stage: ownership, refusals, links, rollback (G8, R1 at the library level)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate
from mcpmint.render.templates import FileTree
from mcpmint.write.files import MANIFEST, write_tree

from .conftest import SPECS


def tree(**generated: str) -> FileTree:
    return FileTree(generated=dict(generated), scaffold={"README.md": "yours\n"})


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_fresh_folder_gets_every_file_and_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = DiagnosticSink()
    report = write_tree(tree(**{"src/a.py": "A\n"}), out, sink=sink)
    assert not sink.has_errors
    assert snapshot(out).keys() == {"src/a.py", "README.md", MANIFEST}
    assert report.scaffolded == ["README.md"]
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert list(manifest["files"]) == ["src/a.py"]


def test_scaffold_files_are_never_rewritten_and_stale_generated_files_go(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(**{"src/a.py": "A\n", "src/old.py": "OLD\n"}), out, sink=DiagnosticSink())
    (out / "README.md").write_text("my words\n", encoding="utf-8")
    sink = DiagnosticSink()
    report = write_tree(tree(**{"src/a.py": "A2\n"}), out, sink=sink)
    assert not sink.has_errors
    assert report.removed == ["src/old.py"] and not (out / "src" / "old.py").exists()
    assert (out / "README.md").read_text(encoding="utf-8") == "my words\n"
    assert (out / "src" / "a.py").read_text(encoding="utf-8") == "A2\n"


def test_an_edited_stale_file_is_kept_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(**{"src/a.py": "A\n", "src/old.py": "OLD\n"}), out, sink=DiagnosticSink())
    (out / "src" / "old.py").write_text("OLD + mine\n", encoding="utf-8")
    sink = DiagnosticSink()
    write_tree(tree(**{"src/a.py": "A\n"}), out, sink=sink)
    assert (out / "src" / "old.py").read_text(encoding="utf-8") == "OLD + mine\n"
    assert any("edited by hand" in w.message for w in sink.warnings)


def test_a_checkout_that_turned_lf_into_crlf_is_neither_an_edit_nor_a_change(
    tmp_path: Path,
) -> None:
    """A Windows checkout (`core.autocrlf`) rewrites every generated file with CRLF: the
    files are compared as text is read, with universal newlines."""
    out = tmp_path / "out"
    files = {"src/a.py": "A\nB\n", "src/b.py": "C\n"}
    write_tree(tree(**files), out, sink=DiagnosticSink())
    for path in files:
        (out / path).write_bytes((out / path).read_bytes().replace(b"\n", b"\r\n"))
    sink = DiagnosticSink()
    report = write_tree(tree(**files), out, sink=sink)
    assert not sink.has_errors and report.unchanged == [MANIFEST, "src/a.py", "src/b.py"]
    # A real edit under CRLF is still one.
    (out / "src/a.py").write_bytes(b"A\r\nmine\r\n")
    sink = DiagnosticSink()
    report = write_tree(tree(**{**files, "src/a.py": "A2\n"}), out, sink=sink)
    assert report.refused == ["src/a.py"] and "edited by hand" in sink.errors[0].message
    assert "-A2" in report.diffs["src/a.py"] and "+mine" in report.diffs["src/a.py"]


def test_an_error_in_the_middle_of_writing_leaves_the_previous_tree_byte_for_byte(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    write_tree(tree(**{"a.py": "A\n", "b.py": "B\n", "c.py": "C\n"}), out, sink=DiagnosticSink())
    before = snapshot(out)
    calls: list[str] = []

    def fault(path: str) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise OSError("disk full (injected)")

    with pytest.raises(OSError, match="injected"):
        write_tree(
            tree(**{"a.py": "A2\n", "b.py": "B2\n", "d.py": "D\n"}),
            out,
            sink=DiagnosticSink(),
            _fault=fault,
        )
    assert len(calls) == 3
    assert snapshot(out) == before


def test_the_roll_back_also_works_where_files_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous versions are kept as second links to the same files, or copied where a
    file system refuses links; either way a failure puts every byte back."""
    out = tmp_path / "out"
    write_tree(tree(**{"a.py": "A\n", "b.py": "B\n"}), out, sink=DiagnosticSink())
    before = snapshot(out)
    refused: list[str] = []

    def no_links(source: object, target: object) -> None:
        refused.append(str(source))
        raise OSError("links not supported (injected)")

    monkeypatch.setattr(os, "link", no_links)

    def fault(path: str) -> None:
        if path == "b.py":
            raise OSError("disk full (injected)")

    with pytest.raises(OSError, match="disk full"):
        write_tree(
            tree(**{"a.py": "A2\n", "b.py": "B2\n"}), out, sink=DiagnosticSink(), _fault=fault
        )
    assert refused  # the copy was the way the previous version was kept
    assert snapshot(out) == before


def test_G8_a_symlink_at_a_generated_path_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    write_tree(tree(**{"src/a.py": "A\n"}), out, sink=DiagnosticSink())
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    (out / "src" / "a.py").unlink()
    os.symlink(victim, out / "src" / "a.py")
    sink = DiagnosticSink()
    write_tree(tree(**{"src/a.py": "A2\n"}), out, sink=sink)
    assert sink.has_errors and "symbolic link" in sink.errors[0].message
    assert victim.read_text(encoding="utf-8") == "precious\n"


def test_G8_a_linked_folder_leading_outside_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(**{"a.py": "A\n"}), out, sink=DiagnosticSink())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "src")
    sink = DiagnosticSink()
    write_tree(tree(**{"a.py": "A\n", "src/new.py": "N\n"}), out, sink=sink)
    assert sink.has_errors
    assert list(elsewhere.iterdir()) == []


def test_G8_a_hand_written_file_lacking_the_manifest_entry_is_not_overwritten(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "src").mkdir(parents=True)
    (out / "src" / "a.py").write_text("written by a person\n", encoding="utf-8")
    sink = DiagnosticSink()
    report = write_tree(tree(**{"src/a.py": "A\n"}), out, sink=sink)
    assert report.refused == ["src/a.py"]
    assert "not written by mcpmint" in sink.errors[0].message
    assert (out / "src" / "a.py").read_text(encoding="utf-8") == "written by a person\n"


def test_G8_path_like_names_in_the_spec_are_sanitised_and_stay_inside(tmp_path: Path) -> None:
    spec = yaml.safe_load((SPECS / "petstore.yaml").read_text(encoding="utf-8"))
    spec["info"]["title"] = "/etc/cron.d/x"
    operation = spec["paths"]["/pets"]["get"]
    operation["operationId"] = "../../evil"
    operation["tags"] = ["..\\x"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    out = tmp_path / "work" / "out"
    sink = DiagnosticSink()
    generate(path, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    assert written and all(out in p.parents for p in written)
    tools = json.loads(next(out.rglob("tools.json")).read_text(encoding="utf-8"))
    assert "etc_evil" in [t["name"] for t in tools["tools"]]
    assert (out / "src" / "etc_mcp" / "server.py").is_file()
