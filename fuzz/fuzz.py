"""A mutation fuzzer over the test corpus, for the parts that read user input:

    python fuzz/fuzz.py hlo --seconds 60           # HLO parser, verifier, emitters
    python fuzz/fuzz.py indexing_map --seconds 60  # the #xla_gpu.indexing_map parser
    python fuzz/fuzz.py mlir --seconds 60          # MLIR parsing + xla_gpu passes (to CPU LLVM)

Inputs are the corpus files (test/**/*.hlo, test/**/*.mlir) mutated a few
times each: bytes flipped, lines dropped or duplicated, numbers replaced by
extremes, tokens spliced from other files. A worker process runs them; the
input it is on is announced before it runs, so a worker that dies (a
SIGSEGV, an abort in C++) is a crash tied to one input. Every input must end
in one of: accepted, or a project error (HloParseError, EmitterError,
MLIRError, ... -- what a tool prints as one line). Anything else -- another
Python exception (an "internal error" in a tool), a crash -- is a finding,
written to fuzz/findings/. Exit status 1 when there is a finding.

The run is deterministic for a seed: input k is the same on every run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = ROOT / "fuzz" / "findings"
EXTREMES = ["0", "-1", "1", "2147483647", "2147483648", "-2147483649", "4294967296",
            "9223372036854775807", "-9223372036854775808", "18446744073709551616",
            "100000000000", "1e400", "nan", "inf"]
NUMBER = re.compile(r"-?\d+")


def corpus(harness: str) -> list[str]:
    suffix = {"hlo": ".hlo", "indexing_map": ".mlir", "mlir": ".mlir"}[harness]
    files = sorted(p for p in (ROOT / "test").rglob(f"*{suffix}") if "Output" not in p.parts)
    texts = [p.read_text() for p in files]
    if harness == "indexing_map":
        maps = []
        for t in texts:
            maps += re.findall(r'#xla_gpu\.indexing_map<"(.*?)">', t)
        maps = [re.sub(r'"\s*"', "", m) for m in maps]
        return maps or ["(d0) -> (d0), domain: d0 in [0, 3]"]
    return texts


def mutate(text: str, others: list[str], rng: random.Random) -> str:
    """One to four random edits of `text`."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        if not text:
            return rng.choice(others)
        if kind == 0:  # a byte
            i = rng.randrange(len(text))
            text = text[:i] + chr(rng.randrange(32, 127)) + text[i + 1:]
        elif kind == 1:  # a number to an extreme
            numbers = list(NUMBER.finditer(text))
            if numbers:
                m = rng.choice(numbers)
                text = text[:m.start()] + rng.choice(EXTREMES) + text[m.end():]
        elif kind == 2:  # drop a line
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 3:  # duplicate a line
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 4:  # splice a line from another input
            other = rng.choice(others).split("\n")
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(other))
            text = "\n".join(lines)
        else:  # delete or repeat a span (unbalanced brackets, nesting)
            i = rng.randrange(len(text))
            j = min(len(text), i + rng.randint(1, 40))
            text = text[:i] + (text[i:j] * rng.randint(2, 8) if rng.random() < 0.5 else "") + \
                text[j:]
    return text


def input_for(harness: str, seed: int, k: int, texts: list[str]) -> str:
    rng = random.Random(seed * 1_000_003 + k)
    return mutate(rng.choice(texts), texts, rng)


# -- the worker: runs inputs in this process ----------------------------------


def _worker(harness: str, seed: int, start: int) -> None:
    """Runs inputs start, start+1, ... forever; before each, prints its
    number (so a crash is tied to it); after, prints its outcome."""
    import xla_gpu  # noqa: F401
    from mlir import ir
    from mlir.passmanager import PassManager

    from xla_gpu import IndexingMap, IndexingMapError
    from xla_gpu.emitters import EmitterError, find_fusion, make_emitter
    from xla_gpu.hlo import HloParseError, parse_hlo
    from xla_gpu.indexing import IndexingError
    from xla_gpu.pipelines import parse_module, verify

    expected = (HloParseError, EmitterError, IndexingError, IndexingMapError, ir.MLIRError)
    texts = corpus(harness)
    pipeline = ("builtin.module(inline,xla-erase-dead-functions,canonicalize,"
                "func.func(xla-gpu-lower-xla-gpu-to-scf),func.func(xla-gpu-fuse-loops),"
                "func.func(xla-gpu-lower-xla-gpu-loops-to-scf),"
                "func.func(xla-gpu-lower-tile-copies),func.func(xla-gpu-unswitch-loops),"
                "xla-gpu-flatten-tensors,func.func(xla-gpu-vectorize-loads-stores),"
                "xla-gpu-propagate-slice-indices,func.func(xla-gpu-expand-float-ops),"
                "xla-gpu-lower-tensors,"
                # The CPU target's lowering of what got this far.
                "xla-gpu-lower-kernel-to-cpu,canonicalize,xla-gpu-lower-to-llvm{target=cpu})")
    k = start
    out = sys.stdout
    while True:
        text = input_for(harness, seed, k, texts)
        out.write(f"run {k}\n")
        out.flush()
        outcome = "ok"
        try:
            with ir.Context(), ir.Location.unknown():
                if harness == "hlo":
                    fusion = find_fusion(parse_hlo(text, "fuzz.hlo"))
                    make_emitter(fusion).emit()
                elif harness == "indexing_map":
                    IndexingMap.parse(text).simplify()
                else:
                    module = parse_module(text)
                    verify(module)
                    PassManager.parse(pipeline).run(module.operation)
        except expected:
            outcome = "error"
        except ValueError:
            outcome = "error"  # the project's other error types derive from it
        except RecursionError:
            outcome = "internal RecursionError"
        except Exception as e:  # noqa: BLE001 - this is what the fuzzer looks for
            outcome = f"internal {type(e).__name__}: {' '.join(str(e).split())[:200]}"
        out.write(f"done {k} {outcome}\n")
        out.flush()
        k += 1


# -- the driver ---------------------------------------------------------------------


def run(harness: str, seconds: float, seed: int) -> dict:
    """Runs the harness for `seconds`; returns the counts and findings."""
    counts = {"runs": 0, "ok": 0, "error": 0, "internal": 0, "crash": 0}
    findings: list[tuple[str, int]] = []
    deadline = time.monotonic() + seconds
    start = 0
    texts = corpus(harness)
    while time.monotonic() < deadline:
        proc = subprocess.Popen([sys.executable, __file__, harness, "--worker", str(start),
                                 "--seed", str(seed)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        current = None
        for line in proc.stdout:
            word, k, *rest = line.rstrip("\n").split(" ", 2) + [""]
            if word not in ("run", "done") or not k.isdigit():
                continue  # something else the worker printed
            if word == "run":
                current = int(k)
                continue
            counts["runs"] += 1
            outcome = rest[0]
            if outcome.startswith("internal"):
                counts["internal"] += 1
                findings.append((outcome, int(k)))
            else:
                counts[outcome] += 1
            current = None
            if time.monotonic() >= deadline:
                break
        proc.kill()
        proc.wait()
        if current is not None and time.monotonic() < deadline:
            # The worker died on input `current`: a crash.
            counts["runs"] += 1
            counts["crash"] += 1
            findings.append((f"crash (exit {proc.returncode})", current))
            start = current + 1
        elif current is not None:
            break
        else:
            start = counts["runs"]
    FINDINGS.mkdir(parents=True, exist_ok=True)
    for what, k in findings:
        path = FINDINGS / f"{harness}-seed{seed}-{k}.txt"
        path.write_text(f"// {what}\n{input_for(harness, seed, k, texts)}")
    return {**counts, "findings": findings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("harness", choices=["hlo", "indexing_map", "mlir"])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.harness, args.seed, args.worker)
        return 0
    result = run(args.harness, args.seconds, args.seed)
    print(f"{args.harness}: {result['runs']} inputs in {args.seconds:.0f} s (seed {args.seed}): "
          f"{result['ok']} accepted, {result['error']} clean errors, "
          f"{result['internal']} internal errors, {result['crash']} crashes")
    for what, k in result["findings"][:20]:
        print(f"  input {k}: {what} -> fuzz/findings/{args.harness}-seed{args.seed}-{k}.txt")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
