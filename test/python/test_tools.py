"""The command-line tools on bad input: one clean diagnostic with
file:line:col, exit status 1, no traceback, no crash."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mlir import ir

from xla_gpu import _capi

MAP_RANGE = ('func.func @f() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), '
             'domain: d0 in [4, 1]">} {\n  return\n}\n')
MAP_GARBAGE = ('func.func @f() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), '
               'domain: d0 in [0, 1] ) ">} {\n  return\n}\n')


def col(text, token):
    """1-based column of `token` on the first line of `text`."""
    return text.index(token) + 1


BAD_INPUTS = {
    "malformed IR": ("func.func @f( {\n",
                     "bad.mlir:1:14: error: expected non-function type"),
    "unknown op": ("func.func @f() {\n  xla_gpu.frob\n  return\n}\n",
                   "bad.mlir:2:3: error: custom op 'xla_gpu.frob' is unknown"),
    "verifier failure": (
        "func.func @f(%t: tensor<2xf32>, %i: index) -> tensor<2xf32> {\n"
        "  %r = xla_gpu.predicated_insert %i into %t[%i] if %i : tensor<2xf32>\n"
        "  return %r : tensor<2xf32>\n}\n",
        "bad.mlir:2:"),
    # The column points inside the map string, at the offending entry.
    "bad indexing map": (
        MAP_RANGE,
        f"bad.mlir:1:{col(MAP_RANGE, 'd0 in [4')}: error: invalid indexing map: "
        "lower bound 4 of 'd0' is greater than its upper bound 1"),
    "garbage after map": (
        MAP_GARBAGE,
        f"bad.mlir:1:{col(MAP_GARBAGE, ' ) ') + 1}: error: invalid indexing map: "
        "unexpected ')' after the indexing map"),
    # 4000 nested regions overflowed the parser's stack (SIGSEGV); a brace
    # in a string or a comment does not count.
    "deep regions": (
        "func.func @f(%c: i1) {\n" + "scf.if %c { // {\n" * 4000 + "}\n" * 4000 +
        "return\n}\n",
        "bad.mlir:1001:11: error: regions and attribute dictionaries are nested deeper "
        "than 1000 levels"),
}


def test_a_diagnostic_quoting_a_non_utf8_byte_does_not_abort(ctx):
    """`\\99` in a map string is byte 0x99, which the map parser quoted raw:
    the Python bindings abort converting a diagnostic that is not UTF-8
    (found by fuzz/fuzz.py, mlir harness, seed 6). Now quoted as MLIR
    prints strings."""
    from xla_gpu import pipelines
    text = ('#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0,\\99]">\n'
            'func.func @f(%i: index) -> index {\n'
            '  %r = xla_gpu.apply_indexing #map(%i)\n  return %r : index\n}\n')
    with pytest.raises(ir.MLIRError, match=r"expected an integer, found '\\99'"):
        pipelines.parse_module(text)


def test_python_parse_refuses_deep_nesting(ctx):
    from xla_gpu import pipelines
    text, expected = BAD_INPUTS["deep regions"]
    with pytest.raises(ValueError, match=expected):
        pipelines.parse_module(text, "bad.mlir")
    fine = 'func.func @f() attributes {s = "{{{{"} { // {{{{\n  return\n}\n'
    assert "@f" in str(pipelines.parse_module(fine))


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_xla_gpu_opt_bad_input(tmp_path, name):
    text, expected = BAD_INPUTS[name]
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    proc = subprocess.run([str(_capi.OPT_PATH), str(path)], capture_output=True,
                          text=True)
    assert proc.returncode == 1, proc
    assert expected in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Stack dump" not in proc.stderr  # LLVM's crash handler output
    assert proc.stdout == ""


def test_python_entry_point_runs_the_driver(tmp_path):
    path = tmp_path / "ok.mlir"
    path.write_text("func.func @f() {\n  %0 = xla_gpu.allocate_shared : tensor<4xf32>\n"
                    "  return\n}\n")
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.opt", str(path),
                           "-canonicalize"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "xla_gpu.allocate_shared : tensor<4xf32>" in proc.stdout


def test_python_entry_point_bad_flag():
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.opt",
                           "--no-such-flag"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Unknown command line argument '--no-such-flag'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_correctness_errors_treat_equal_infinities_and_nans_as_equal():
    import numpy as np
    from xla_gpu.tools.test_correctness import errors

    inf, nan = np.inf, np.nan
    got = np.array([inf, -inf, nan, 1.0, inf, 2.0], np.float32)
    want = np.array([inf, -inf, nan, 1.5, -inf, nan], np.float32)
    diff, rel = errors(got, want)
    assert list(diff[:3]) == [0, 0, 0]
    assert diff[3] == 0.5 and np.isclose(rel[3], 1 / 3)
    # Different infinities and a number against NaN are errors, not equal.
    assert not diff[4] <= 1e30 and not diff[5] <= 1e30


def _fusion_text(body: str, params: str, out: str) -> str:
    return (f"HloModule m\n\nfused {{\n{body}\n}}\n\nENTRY e {{\n{params}\n"
            f"  ROOT f = {out} fusion({', '.join(p.split()[0] for p in params.splitlines())}), "
            "kind=kLoop, calls=fused\n}\n")


# Malformed fusions: (fused body, entry parameters, fusion shape, the line of
# the offending instruction in the file, the message).
BAD_FUSIONS = {
    "operand count": ("  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] negate(p0, p0)",
                      "  a = f32[4] parameter(0)", "f32[4]", 5,
                      "'negate' takes 1 operand, got 2"),
    "operand shape": ("  p0 = f32[4] parameter(0)\n  p1 = f32[5] parameter(1)\n"
                      "  ROOT a = f32[4] add(p0, p1)",
                      "  a = f32[4] parameter(0)\n  b = f32[5] parameter(1)", "f32[4]", 6,
                      "cannot emit a (add): operand 1 (p1) has shape f32[5], expected "
                      "dimensions [4]"),
    "element type": ("  p0 = f32[4] parameter(0)\n  p1 = s32[4] parameter(1)\n"
                     "  ROOT a = f32[4] add(p0, p1)",
                     "  a = f32[4] parameter(0)\n  b = s32[4] parameter(1)", "f32[4]", 6,
                     "operand element type s32 does not match the result's f32"),
    "compare without direction": ("  p0 = f32[4] parameter(0)\n"
                                  "  ROOT c = pred[4] compare(p0, p0)",
                                  "  a = f32[4] parameter(0)", "pred[4]", 5,
                                  "'compare' needs direction="),
    "internal tuple": ("  p0 = f32[4] parameter(0)\n  t = (f32[4], f32[4]) tuple(p0, p0)\n"
                       "  g = f32[4] get-tuple-element(t), index=0\n  ROOT n = f32[4] negate(g)",
                       "  a = f32[4] parameter(0)", "f32[4]", 5,
                       "cannot emit t (tuple): internal tuples are not supported"),
    "outputs of two sizes": ("  p0 = f32[4] parameter(0)\n  n = f32[2] slice(p0), slice={[0:2]}\n"
                             "  ROOT t = (f32[4], f32[2]) tuple(p0, n)",
                             "  a = f32[4] parameter(0)", "(f32[4], f32[2])", 5,
                             "a loop fusion's outputs have one element count: f32[2] has 2"),
    "float op on integers": ("  p0 = s32[4] parameter(0)\n  ROOT e = s32[4] exponential(p0)",
                             "  a = s32[4] parameter(0)", "s32[4]", 5,
                             "'exponential' needs a floating-point operand, got s32"),
    "complex to real convert": ("  p0 = c64[4] parameter(0)\n  ROOT c = f32[4] convert(p0)",
                                "  a = c64[4] parameter(0)", "f32[4]", 5,
                                "convert from c64 to f32: take real() or imag() first"),
    "ordered compare of complex": ("  p0 = c64[4] parameter(0)\n"
                                   "  ROOT c = pred[4] compare(p0, p0), direction=LT",
                                   "  a = c64[4] parameter(0)", "pred[4]", 5,
                                   "complex numbers are compared for EQ and NE only, not LT"),
    "real of the wrong width": ("  p0 = c64[4] parameter(0)\n  ROOT r = f64[4] real(p0)",
                                "  a = c64[4] parameter(0)", "f64[4]", 5,
                                "'real' of c64 produces f32, not f64"),
    "unsupported element type": ("  p0 = f8e8m0fnu[4] parameter(0)\n"
                                 "  ROOT c = f32[4] convert(p0)",
                                 "  a = f8e8m0fnu[4] parameter(0)", "f32[4]", 4,
                                 "element type f8e8m0fnu is not supported by the emitters yet"),
    "slice past the operand": ("  p0 = f32[4] parameter(0)\n"
                               "  ROOT s = f32[5] slice(p0), slice={[0:5]}",
                               "  a = f32[4] parameter(0)", "f32[5]", 5,
                               "reads dimension 0 of operand 0 (p0, f32[4]) at [0, 4], "
                               "outside [0, 3]"),
    "broadcast misplaced": ("  p0 = f32[4] parameter(0)\n"
                            "  ROOT b = f32[4,2] broadcast(p0), dimensions={1}",
                            "  a = f32[4] parameter(0)", "f32[4,2]", 5,
                            "dimensions={1} does not place f32[4] into f32[4,2]"),
    "transpose not a permutation": ("  p0 = f32[4,3] parameter(0)\n"
                                    "  ROOT t = f32[3,4] transpose(p0), dimensions={1,1}",
                                    "  a = f32[4,3] parameter(0)", "f32[3,4]", 5,
                                    "dimensions={1,1} is not a permutation"),
    "reshape of another size": ("  p0 = f32[4] parameter(0)\n  ROOT r = f32[3] reshape(p0)",
                                "  a = f32[4] parameter(0)", "f32[3]", 5,
                                "f32[3] and operand f32[4] have different element counts"),
    "pad of the wrong size": ("  p0 = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                              "  ROOT p = f32[6] pad(p0, z), padding=1_2",
                              "  a = f32[4] parameter(0)", "f32[6]", 6,
                              "f32[6] cannot be made of operand 0 (p0, f32[4])"),
    "dynamic-update-slice start count": (
        "  p0 = f32[4,5] parameter(0)\n  u = f32[2,5] parameter(1)\n  i = s32[] parameter(2)\n"
        "  ROOT d = f32[4,5] dynamic-update-slice(p0, u, i)",
        "  a = f32[4,5] parameter(0)\n  b = f32[2,5] parameter(1)\n  c = s32[] parameter(2)",
        "f32[4,5]", 7, "dynamic-update-slice of a rank-2 operand takes 2 scalar start indices, "
        "got 1"),
    "dynamic-slice start count": (
        "  p0 = f32[4,5] parameter(0)\n  i = s32[] parameter(1)\n"
        "  ROOT d = f32[2,5] dynamic-slice(p0, i, i, i), dynamic_slice_sizes={2,5}",
        "  a = f32[4,5] parameter(0)\n  c = s32[] parameter(1)", "f32[2,5]", 6,
        "dynamic-slice of a rank-2 operand takes 2 scalar start indices, got 3"),
    "constant out of range": ("  c = f16[] constant(1e400)\n  p0 = f16[4] parameter(0)\n"
                              "  ROOT b = f16[4] broadcast(c), dimensions={}",
                              "  a = f16[4] parameter(0)", "f16[4]", 4,
                              "the constant 1e400 is out of range for f16"),
    "pad without padding": ("  p0 = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                            "  ROOT r = f32[7] pad(p0, z)", "  a = f32[4] parameter(0)", "f32[7]",
                            6, "'pad' needs padding="),
    "reduce-precision without bits": ("  p0 = f32[4] parameter(0)\n"
                                      "  ROOT r = f32[4] reduce-precision(p0)",
                                      "  a = f32[4] parameter(0)", "f32[4]", 5,
                                      "'reduce-precision' needs exponent_bits=, mantissa_bits="),
    "dynamic-slice past the operand": (
        "  p0 = f32[4] parameter(0)\n  i = s32[] constant(0)\n"
        "  ROOT d = f32[9] dynamic-slice(p0, i), dynamic_slice_sizes={9}",
        "  a = f32[4] parameter(0)", "f32[9]", 6,
        "dynamic_slice_sizes={9} do not fit the operand f32[4]"),
    "iota dimension": ("  p0 = f32[4] parameter(0)\n  ROOT i = s32[4] iota(), iota_dimension=1",
                       "  a = f32[4] parameter(0)", "s32[4]", 5,
                       "iota_dimension=1 is not a dimension of s32[4]"),
    "shift of floats": ("  p0 = f32[4] parameter(0)\n  ROOT s = f32[4] shift-left(p0, p0)",
                        "  a = f32[4] parameter(0)", "f32[4]", 5,
                        "'shift-left' needs an integer operand, got f32"),
}


@pytest.mark.parametrize("tool", ["fusion-to-mlir", "test-correctness", "run-hlo"])
@pytest.mark.parametrize("name", sorted(BAD_FUSIONS))
def test_malformed_fusion_is_one_located_error(tmp_path, name, tool):
    body, params, out, line, message = BAD_FUSIONS[name]
    path = tmp_path / "bad.hlo"
    path.write_text(_fusion_text(body, params, out))
    module = tool.replace("-", "_")
    proc = subprocess.run([sys.executable, "-m", f"xla_gpu.tools.{module}", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith(f"{path}:{line}:3: error: "), proc.stderr
    assert message in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("tool", ["fusion_to_mlir", "test_correctness", "run_hlo",
                                  "hlo_indexing"])
def test_python_tool_bad_command_line_is_status_1(tool):
    proc = subprocess.run([sys.executable, "-m", f"xla_gpu.tools.{tool}", "x.hlo",
                           "--no-such-flag"], capture_output=True, text=True)
    assert proc.returncode == 1, proc
    assert "unrecognized arguments: --no-such-flag" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_device_is_refused():
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.fusion_to_mlir", "x.hlo",
                           "--device=v100x"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "argument --device: invalid choice: 'v100x'" in proc.stderr


GELU = str(Path(__file__).resolve().parents[1] / "hlo" / "gelu.hlo")


@pytest.mark.parametrize("alias, ours", [
    ("run_hlo_module", "run-hlo"), ("fusion_to_mlir", "fusion-to-mlir"),
    ("test_correctness", "test-correctness"), ("mlir_fusions_opt", "xla-gpu-opt")])
def test_xla_tool_names_are_aliases_in_the_venv(alias, ours):
    """`make` installs XLA's tool names beside ours; both run the same tool."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / ours).exists():
        pytest.skip("not running from the project's venv")
    assert (bin_dir / alias).exists(), f"{alias} is not installed next to {ours}"
    if alias == "mlir_fusions_opt":
        args = ["-", "-xla-erase-dead-functions"]
        proc = subprocess.run([str(bin_dir / alias), *args], input="func.func private @f()\n",
                              capture_output=True, text=True)
        assert proc.returncode == 0 and "@f" not in proc.stdout, proc
        return
    if alias == "run_hlo_module":
        args = ["--platform=CPU", "--reference_platform=", GELU]
    else:
        args = [GELU]
    results = [subprocess.run([str(bin_dir / name), *args], capture_output=True, text=True)
               for name in (alias, ours)]
    assert [r.returncode for r in results] == [0, 0], results
    if alias == "fusion_to_mlir":
        assert results[0].stdout == results[1].stdout
    else:
        assert results[0].stdout.split(":")[0] == results[1].stdout.split(":")[0]


def test_a6000_device_is_xlas_test_default():
    from xla_gpu.emitters import device_named
    d = device_named("a6000")
    assert d.chip == "sm_86" and d.max_resident_threads == 84 * 1536


@pytest.mark.parametrize("text, message, verifier", [
    ("  p = f32[4] parameter(0)\n  ROOT b = f32[4,5] broadcast(p), dimensions={7}",
     "its attributes do not fit its shapes (d7 of 2 dimensions)",
     "dimensions={7} does not place f32[4] into f32[4,5]"),
    ("  p = f32[4,5] parameter(0)\n  u = f32[2] parameter(1)\n  i = s32[] parameter(2)\n"
     "  ROOT d = f32[4,5] dynamic-update-slice(p, u, i)",
     "its attributes do not fit its shapes (s1 of 1 symbols)",
     "dynamic-update-slice of a rank-2 operand takes 2 scalar start indices, got 1"),
])
def test_malformed_indexing_ops_do_not_abort(tmp_path, text, message, verifier):
    """Maps built from a malformed broadcast or dynamic-update-slice used to
    trip an assertion in MLIR's AffineMap (the process aborted): the
    analysis raises, and the tools' verifier reports the instruction first."""
    from mlir import ir
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.indexing import MalformedInstructionError, output_to_input_indexing
    source = f"HloModule m\nENTRY e {{\n{text}\n}}\n"
    module = parse_hlo(source)
    with ir.Context():
        with pytest.raises(MalformedInstructionError, match=re.escape(message)):
            output_to_input_indexing(module.entry.root)
    path = tmp_path / "bad.hlo"
    path.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.hlo_indexing", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc
    assert verifier in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("entry, message", [
    ("  a = f32[5] parameter(0)\n  ROOT f = f32[4] fusion(a), kind=kLoop, calls=fused",
     "operand 0 (a) is f32[5], parameter 0 of fused is f32[4]"),
    ("  a = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(a, a), kind=kLoop, calls=fused",
     "the fusion has 2 operands, its computation fused 1 parameters"),
    ("  a = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(a), kind=kLoop, calls=e",
     "calls=e names the entry computation"),
    ("  a = f32[4] parameter(0)\n  ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused",
     "the fusion is f32[8], its computation returns f32[4]"),
])
def test_fusion_must_match_its_computation(tmp_path, entry, message):
    path = tmp_path / "bad.hlo"
    path.write_text("HloModule m\nfused {\n  p = f32[4] parameter(0)\n"
                    f"  ROOT n = f32[4] negate(p)\n}}\nENTRY e {{\n{entry}\n}}\n")
    for tool in ("fusion_to_mlir", "test_correctness", "run_hlo"):
        proc = subprocess.run([sys.executable, "-m", f"xla_gpu.tools.{tool}", str(path)],
                              capture_output=True, text=True)
        assert proc.returncode == 1, (tool, proc)
        assert proc.stderr.startswith(f"{path}:8:3: error: cannot emit f (fusion): "), \
            (tool, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("tool", ["test_correctness", "run_hlo"])
def test_huge_shapes_are_refused_before_allocating(tmp_path, tool):
    path = tmp_path / "huge.hlo"
    path.write_text("HloModule m\nfused {\n  p = f32[100000000000] parameter(0)\n"
                    "  ROOT n = f32[100000000000] negate(p)\n}\nENTRY e {\n"
                    "  a = f32[100000000000] parameter(0)\n"
                    "  ROOT f = f32[100000000000] fusion(a), kind=kLoop, calls=fused\n}\n")
    proc = subprocess.run([sys.executable, "-m", f"xla_gpu.tools.{tool}", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc
    assert "need 745.1 GiB of host memory, more than the 4 GiB a run may allocate" in proc.stderr


# Modules XLA's own HLO parser (jaxlib 0.10.2) aborts or segfaults on: run-hlo
# hands what our emitters do not take to XLA, so it asks XLA's parser first,
# in a child process; the operand counts are checked by ours already.
XLA_PARSER_CRASHES = {
    "tuple of the wrong shape": ("ROOT x = f32[] tuple()", "XLA's HLO parser crashed"),
    "replica-id of f32": ("ROOT x = f32[] replica-id()", "XLA's HLO parser crashed"),
    "dot without operands": ("ROOT x = f32[] dot()", ":4:3: error: 'dot' takes 2 operands"),
}


@pytest.mark.parametrize("name", XLA_PARSER_CRASHES)
def test_run_hlo_survives_what_crashes_xlas_parser(tmp_path, name):
    line, message = XLA_PARSER_CRASHES[name]
    path = tmp_path / "m.hlo"
    path.write_text(f"HloModule m\n\nENTRY e {{\n  {line}\n}}\n")
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.run_hlo", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_run_hlo_reports_xlas_parser_message(tmp_path):
    """A module our parser takes and XLA's does not (a module named like a
    type: XLA lexes `s4` as one): the error is XLA's message with its place
    and source line, not the caret line alone that ends XLA's output."""
    path = tmp_path / "m.hlo"
    path.write_text("HloModule s4\n\nfused {\n  a = s4[8] parameter(0)\n"
                    "  ROOT n = s4[8] negate(a)\n}\n\nENTRY e {\n  p = s4[8] parameter(0)\n"
                    "  ROOT f = s4[8] fusion(p), kind=kLoop, calls=fused\n}\n")
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.run_hlo", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc
    assert "XLA's HLO parser: 1:10: error: expects name (in 'HloModule s4')" in proc.stderr, \
        proc.stderr


# Found by fuzz/fuzz.py (hlo harness, seeds 0 and 1): each was an internal
# error; minimized by hand. (text of the module, line, message)
FUZZ_FINDINGS = {
    "reducer compare without direction": (
        "HloModule m\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  gt = pred[] compare(a, b)\n  ROOT s = f32[] select(gt, a, b)\n}\n"
        "fused {\n  p = f32[4,8] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[8] reduce(p, z), dimensions={0}, to_apply=mx\n}\n"
        "ENTRY e {\n  p = f32[4,8] parameter(0)\n"
        "  ROOT f = f32[8] fusion(p), kind=kLoop, calls=fused\n}\n",
        5, "cannot emit gt (compare): 'compare' needs direction="),
    # Seed 5: a reduce of f32[88] over dimension 1 (IndexError in the
    # fusion analysis).
    "reduce dimensions past the rank": (
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\nfused {\n  p = f32[88] parameter(0)\n"
        "  z = f32[] constant(0)\n  r = f32[8] reduce(p, z), dimensions={1}, to_apply=add\n"
        "  ROOT l = f32[8] log(r)\n}\nENTRY e {\n  p = f32[88] parameter(0)\n"
        "  ROOT f = f32[8] fusion(p), kind=kInput, calls=fused\n}\n",
        10, "dimensions={1} are not distinct dimensions of f32[88]"),
    # Seed 7: a gather whose start_index_map names dimension -2147483649
    # (IndexError in the elemental emitter).
    "gather start_index_map past the operand": (
        "HloModule m\nfused {\n  op = f32[10,12] parameter(0)\n  pi = s32[5,2] parameter(1)\n"
        "  g = f32[5,1,4] gather(op, pi), offset_dims={1,2}, collapsed_slice_dims={}, "
        "start_index_map={-2147483649,0}, index_vector_dim=1, slice_sizes={1,4}\n"
        "  ROOT r = f32[5,4] reshape(g)\n}\nENTRY e {\n  a = f32[10,12] parameter(0)\n"
        "  b = s32[5,2] parameter(1)\n  ROOT f = f32[5,4] fusion(a, b), kind=kLoop, calls=fused\n}\n",
        5, "start_index_map={-2147483649,0} must name 2 distinct dimensions"),
    "broadcast without an operand": (
        "HloModule m\nfused {\n  p = f32[7] parameter(0)\n"
        "  ROOT b = f32[7,9] broadcast(), dimensions={0}\n}\n"
        "ENTRY e {\n  p = f32[7] parameter(0)\n"
        "  ROOT f = f32[7,9] fusion(p), kind=kLoop, calls=fused\n}\n",
        4, "'broadcast' takes 1 operand, got 0"),
    "fusion without calls=": (
        "HloModule m\nfused {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"
        "ENTRY e {\n  p = f32[2] parameter(0)\n"
        "  ROOT f = f32[2] fusion(p), kind=kLoop, calgs=fused\n}\n",
        8, "a fusion needs calls= naming its computation"),
    "2^63 elements": (
        "HloModule m\nfused {\n  ROOT i = s32[9223372036854775807] iota(), iota_dimension=0\n}\n"
        "ENTRY e {\n  ROOT f = s32[9223372036854775807] fusion(), kind=kLoop, calls=fused\n}\n",
        3, "more than 64-bit indexing covers"),
}


@pytest.mark.parametrize("name", sorted(FUZZ_FINDINGS))
def test_fuzz_findings_are_located_errors(tmp_path, name):
    text, line, message = FUZZ_FINDINGS[name]
    path = tmp_path / "found.hlo"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.fusion_to_mlir", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith(f"{path}:{line}:3: error: "), proc.stderr
    assert message in proc.stderr and "internal error" not in proc.stderr


def test_test_correctness_outputs_start_as_garbage():
    """test-correctness's output arrays start as device memory does (bytes
    0xA5), not as zeros: an element a kernel leaves unwritten differs from
    XLA's (here: a kernel that writes the even elements only)."""
    import numpy as np
    from xla_gpu.runtime import CpuKernel
    from xla_gpu.tools.test_correctness import errors, unwritten

    out = unwritten((8,), np.float32)
    assert out.view(np.uint32).tolist() == [0xA5A5A5A5] * 8
    assert unwritten((2, 3), np.bool_).all() and unwritten((), np.int8).view(np.uint8) == 0xA5
    kernel = CpuKernel("""
#even = #xla_gpu.indexing_map<"(d0) -> (d0 * 2), domain: d0 in [0, 3]">
func.func @main(%in: tensor<8xf32>, %out: tensor<8xf32>) -> tensor<8xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 3 : index]}
  %i = xla_gpu.apply_indexing #even(%tid)
  %v = tensor.extract %in[%i] : tensor<8xf32>
  %w = tensor.insert %v into %out[%i] : tensor<8xf32>
  return %w : tensor<8xf32>
}
""")
    x = np.zeros(8, np.float32)
    kernel(x, out)
    abs_err = errors(out, x)[0]
    assert (abs_err[0::2] == 0).all() and (abs_err[1::2] > 0).all()


def test_run_hlo_reuses_only_outputs_nothing_holds():
    """run-hlo's output pool (an allocator's free list): a kernel's output
    arrays come back for a later launch only once nothing else holds them
    -- not while a caller keeps the array, its list, or a view of it."""
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.tools.run_hlo import _OutputPool
    module = parse_hlo("HloModule m\nfused {\n  a = f32[4] parameter(0)\n"
                       "  ROOT e = f32[4] exponential(a)\n}\nENTRY e {\n"
                       "  p = f32[4] parameter(0)\n"
                       "  ROOT f = f32[4] fusion(p), kind=kLoop, calls=fused\n}\n")
    pool = _OutputPool(module.entry.root)
    first = pool.take()
    array = id(first[0])
    assert id(pool.take()[0]) != array          # the list is held
    view = first[0].reshape(2, 2)
    del first
    assert id(pool.take()[0]) != array          # a view of it is held
    del view
    again = pool.take()
    assert id(again[0]) == array and again[0].shape == (4,)
    for _ in range(10):
        pool.take()
    assert len(pool._sets) <= _OutputPool.KEPT


_DIVIDES_CONSTANTS = """HloModule m
fused {
  a = s32[64] parameter(0)
  z = s32[] constant(0)
  zb = s32[64] broadcast(z), dimensions={}
  ROOT d = s32[64] DIVISION
}
ENTRY e {
  p0 = s32[64] parameter(0)
  ROOT f = s32[64] fusion(p0), kind=kLoop, calls=fused
}
"""


@pytest.mark.parametrize("division, folds", [
    ("divide(zb, zb)", True), ("remainder(zb, zb)", True),
    ("divide(a, zb)", False), ("remainder(a, zb)", False), ("divide(zb, a)", False)])
def test_xla_dies_folding_an_integer_division_of_constants_by_zero(division, folds):
    """XLA:CPU (the pinned jaxlib) dies of SIGFPE compiling an integer
    divide or remainder of two constants by zero (its folder divides as the
    machine does); one with an operand it cannot fold it compiles.
    division_xla_cannot_fold finds exactly the former."""
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import division_xla_cannot_fold
    text = _DIVIDES_CONSTANTS.replace("DIVISION", division)
    proc = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom xla_gpu.reference import XlaCpuExecutable\n"
         "XlaCpuExecutable(sys.stdin.read())"], input=text, capture_output=True, text=True)
    assert proc.returncode == (-signal.SIGFPE if folds else 0), proc.stderr
    found = division_xla_cannot_fold(parse_hlo(text).computations)
    assert (found.name if found else None) == ("d" if folds else None)


@pytest.mark.parametrize("tool, flags, status, message", [
    ("run_hlo", [], 1, ":6:3: d: an integer remainder of constants by zero, which XLA:CPU folds "
     "as it compiles and dies of SIGFPE on (XLA's x / 0 = -1, x % 0 = x): the reference cannot "
     "run; --reference_platform=\"\" runs our kernels alone"),
    ("run_hlo", ["--reference_platform="], 0, None),
    ("test_correctness", [], 1, ":6:3: d: an integer remainder of constants by zero"),
])
def test_tools_refuse_what_xla_would_die_folding(tmp_path, tool, flags, status, message):
    """run-hlo and test-correctness do not hand XLA:CPU a division it dies
    folding: a located error, status 1; run-hlo without a reference runs
    our kernel, which gives XLA's x % 0 = x."""
    path = tmp_path / "divides.hlo"
    path.write_text(_DIVIDES_CONSTANTS.replace("DIVISION", "remainder(zb, zb)"))
    proc = subprocess.run([sys.executable, "-m", f"xla_gpu.tools.{tool}", str(path), *flags],
                          capture_output=True, text=True)
    assert proc.returncode == status, proc
    if message:
        assert proc.stderr.startswith(f"{tool.replace('_', '-')}: error: {path}{message}"), proc
    else:
        assert "ours (cpu target, 1 fusions)" in proc.stdout


def test_run_hlo_refuses_an_entry_division_xla_would_die_folding(tmp_path):
    """An unfused one is XLA's to run, with or without a reference."""
    path = tmp_path / "entry.hlo"
    path.write_text("HloModule m\nENTRY e {\n  p0 = s32[64] parameter(0)\n"
                    "  z = s32[] constant(0)\n  r = s32[] remainder(z, z)\n"
                    "  rb = s32[64] broadcast(r), dimensions={}\n"
                    "  ROOT a = s32[64] add(p0, rb)\n}\n")
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.tools.run_hlo", str(path),
                           "--reference_platform="], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.startswith(
        f"run-hlo: error: {path}:5:3: r: an integer remainder of constants by zero"), proc
    assert proc.stderr.rstrip().endswith("run-hlo has XLA run the entry's instructions")


@pytest.mark.parametrize("host", [False, True])
def test_run_hlo_compiles_the_host_variants_the_bench_asks_for(monkeypatch, host):
    """run_hlo._compile(host=True) (make bench's HLO cases) emits the CPU
    target's own variant of each kernel, within host_short_rows(), as
    xla_gpu.jax.jit does; run-hlo itself (host=False) XLA:GPU's kernels."""
    from xla_gpu.emitters import DEFAULT_DEVICE
    from xla_gpu.emitters import fusion_analysis
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.tools import run_hlo
    seen = []
    emit = run_hlo.emit_kernel

    def recording(inst, device, **kwargs):
        seen.append((kwargs.get("host", False), fusion_analysis._HOST_SHORT_ROWS.get()))
        return emit(inst, device, **kwargs)

    monkeypatch.setattr(run_hlo, "emit_kernel", recording)
    module = parse_hlo("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  p = f32[64,256,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[64,3] reduce(p, z), dimensions={1}, to_apply=add
}
ENTRY e {
  p = f32[64,256,3] parameter(0)
  ROOT f = f32[64,3] fusion(p), kind=kInput, calls=fused
}
""")
    steps = run_hlo._compile(module, None, DEFAULT_DEVICE, host=host)
    assert [s.ours for s in steps] == [True]
    assert seen == [(host, host)]
