"""The least a fresh process must do to regenerate after a one-operation change, and its time.

    .venv/bin/python benchmarks/floor.py [--spec ../shared/corpus/github.json] [--repeat 5]

The issue's target for a one-operation change is 20% of the cold run (GitHub: 0.44 s of about
2.2 s). This measures what any `mcpmint generate` that starts as a new process would have to
do for it, however incremental the rest: start the interpreter, read and parse the changed
spec, load the previous run's spec to find what changed (here a `marshal` snapshot, the
fastest loader the standard library has) and compare their path items, and write back the
five generated files that hold every tool (`tools.json`, `tools.lock.json`, the generated
tests' cases, `models.py`, `REFERENCE.md`), each patched in memory and hashed. Nothing is
validated, built, rendered or formatted.

The spec is generated into a temporary folder first (one cold `mcpmint generate`); then the
floor script runs `--repeat` times as a subprocess under `/usr/bin/time`, and the wall times
are printed beside the cold run's, with the script's own stage times.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = ROOT.parent / "shared" / "corpus" / "github.json"

# Run as its own process: only the standard library, as a fast path would be.
FLOOR = r"""
import time
start = time.perf_counter()
import hashlib, json, marshal, os, sys
spec, snapshot, out = sys.argv[1], sys.argv[2], sys.argv[3]
imported = time.perf_counter()
with open(spec, "rb") as handle:
    new = json.loads(handle.read())
parsed = time.perf_counter()
with open(snapshot, "rb") as handle:
    old = marshal.loads(handle.read())
loaded = time.perf_counter()
changed = [path for path, item in new["paths"].items() if old["paths"].get(path) != item]
same_components = new.get("components") == old.get("components")
compared = time.perf_counter()
names = ("tools.lock.json", "tools.json", "generated_cases.json", "models.py", "REFERENCE.md")
targets = [
    os.path.join(folder, name)
    for folder, _, files in os.walk(out)
    for name in files
    if name in names
]
for target in targets:
    with open(target, "rb") as handle:
        text = handle.read()
    middle = len(text) // 2  # one tool's text replaced: the file is written whole
    patched = text[:middle] + text[middle:]
    hashlib.sha256(patched).hexdigest()
    with open(target + ".new", "wb") as handle:
        handle.write(patched)
    os.replace(target + ".new", target)
written = time.perf_counter()
print(
    f"imports {imported - start:.3f} parse {parsed - imported:.3f} "
    f"previous {loaded - parsed:.3f} compare {compared - loaded:.3f} "
    f"write {written - compared:.3f} ({len(targets)} files; {len(changed)} path items changed, "
    f"components {'same' if same_components else 'changed'})"
)
sys.stdout.flush()
os._exit(0)  # as mcpmint exits: no time spent freeing the documents
"""


def wall(command: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds of `command` under /usr/bin/time, and its standard output."""
    timing = cwd / "time.txt"
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(timing), "-f", "%e", *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(timing.read_text().split()[-1]), done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.spec.suffix != ".json":
        sys.exit("floor.py: a JSON spec, please (YAML would only make the floor higher)")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        spec = work / "spec.json"
        spec.write_bytes(args.spec.read_bytes())
        out = work / "out"
        cold, _ = wall([sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", "out"], work)
        snapshot = work / "previous.marshal"
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import json, marshal, sys; "
                "open(sys.argv[2], 'wb').write(marshal.dumps(json.load(open(sys.argv[1]))))",
                str(spec),
                str(snapshot),
            ],
            check=True,
        )
        script = work / "floor_run.py"
        script.write_text(FLOOR, encoding="utf-8")
        runs = []
        for _ in range(args.repeat):
            seconds, stages = wall(
                [sys.executable, str(script), str(spec), str(snapshot), str(out)], work
            )
            runs.append(seconds)
            print(f"floor {seconds:.2f} s: {stages}")
        median = statistics.median(runs)
        print(
            f"{args.spec.name}: cold generate {cold:.2f} s; floor of a one-operation change "
            f"{median:.2f} s (median of {len(runs)}, {min(runs):.2f}-{max(runs):.2f}) = "
            f"{median / cold:.0%} of cold; the target, 20% of cold: {0.2 * cold:.2f} s"
        )


if __name__ == "__main__":
    main()
