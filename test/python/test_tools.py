"""The command-line tools on bad input: one clean diagnostic with
file:line:col, exit status 1, no traceback, no crash."""

import subprocess
import sys

import pytest

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
}


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
