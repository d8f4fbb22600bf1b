"""A parser for XLA's HLO text format.

It reads what XLA and JAX print: the spec's gelu.hlo (`%` prefixes, typed
operands such as `bf16[] %constant_0`), jax's pre-optimisation HLO (no `%`,
`ENTRY main.1`, non-default layouts) and its optimised HLO
(`is_scheduled=true`, `entry_computation_layout=`, the FileNames/.../
StackFrames tables, metadata, backend_config, fusions). Every error is an
HloParseError naming line:column and what was expected.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Callable

import numpy as np

from .module import Attribute, HloComputation, HloInstruction, HloModule, Literal
from .opcodes import XLA_OPCODES
from .shape import Layout, Shape
from .types import ELEMENT_TYPES

__all__ = ["HloParseError", "parse_hlo", "parse_shape"]


class HloParseError(Exception):
    """Malformed HLO text: `message` at `line`:`column` of `source`."""

    def __init__(self, message: str, line: int, column: int, source: str | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.source or '<hlo>'}:{self.line}:{self.column}: error: {self.message}"


_NAME = re.compile(r"%?([A-Za-z_][A-Za-z0-9_.\-]*)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_INT = re.compile(r"-?[0-9]+")
_SPACES = re.compile(r"\s*")
# A shape without spaces, dynamic dimensions or layout attributes; dimension
# sizes of up to 18 digits (anything wider goes the long way, to its error).
_PLAIN_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[((?:[0-9]{1,18}(?:,[0-9]{1,18})*)?)\]"
                          r"(?:\{((?:[0-9]{1,18}(?:,[0-9]{1,18})*)?)\})?")
# A string on one line; a backslash escapes any character after it.
_STRING = re.compile(r'"((?:[^"\\\n]|\\[\s\S])*)"')
# balanced()'s characters of note, by its `stop`.
_BALANCED_STOPS: dict[str, re.Pattern] = {}
# Where an instruction may start after an attribute's value on its line:
# white space, then `ROOT` or a name, `=` and a shape (an element type and
# `[`, or a tuple's `(`); not a misplaced attribute, `metadata={...}`.
_INSTRUCTION_SPACE = re.compile(r"\s+(?=ROOT\s|%?[\w.\-]+\s*=)")
_INSTRUCTION_START = re.compile(r"ROOT\s|%?[\w.\-]+\s*=\s*(?:[a-z][a-z0-9]*\[|\()")

_NUMBER = re.compile(
    r"[-+]?(?:inf|nan(?:\([^)]*\))?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")

# Attributes whose value names computations.
_COMPUTATION_ATTRS = ("to_apply", "calls", "condition", "body", "branch_computations",
                      "true_computation", "false_computation", "select", "scatter",
                      "called_computations")
_INT_LIST_ATTRS = ("dimensions", "offset_dims", "collapsed_slice_dims", "start_index_map",
                   "operand_batching_dims", "start_indices_batching_dims", "slice_sizes",
                   "update_window_dims", "inserted_window_dims",
                   "scatter_dims_to_operand_dims", "input_batching_dims",
                   "scatter_indices_batching_dims", "dynamic_slice_sizes",
                   "lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                   "rhs_batch_dims", "fft_length")
_INT_ATTRS = ("index_vector_dim", "iota_dimension", "index", "exponent_bits",
              "mantissa_bits", "feature_group_count", "batch_group_count", "channel_id",
              "k", "all_gather_dimension")
_BOOL_ATTRS = ("is_stable", "largest", "indices_are_sorted", "unique_indices",
               "constrain_layout", "use_global_device_ids")
_WORD_ATTRS = ("kind", "direction", "type", "comparison_type", "api_version",
               "distribution", "fft_type", "custom_call_schedule", "rounding")


class _Parser:
    def __init__(self, text: str, source: str | None, line_starts: list[int] | None = None):
        self.text = text
        self.source = source
        self.pos = 0
        # Where each line starts: found once, when a position is first
        # asked for, and shared with the parsers of attribute values (sub),
        # which had each found them again over the whole text.
        self._line_starts = line_starts

    def _lines(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._line_starts

    # -- positions and errors -------------------------------------------------

    def where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        starts = self._lines()
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, pos - starts[lo] + 1

    def error(self, message: str, pos: int | None = None) -> HloParseError:
        line, col = self.where(pos)
        return HloParseError(message, line, col, self.source)

    def found(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            return "end of input"
        m = re.compile(r"[^\s]{1,20}").match(self.text, self.pos)
        return f"'{m.group(0)}'"

    # -- lexing helpers -----------------------------------------------------

    def skip(self) -> None:
        """Skips whitespace and /* */ or // comments."""
        text = self.text
        if self.pos < len(text) and not text[self.pos].isspace() and text[self.pos] != "/":
            return  # most calls: nothing to skip
        self.pos = _SPACES.match(text, self.pos).end()
        while text.startswith("/", self.pos):
            if text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment")
                self.pos = end + 2
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                break
            self.pos = _SPACES.match(text, self.pos).end()

    def skip_inline(self) -> None:
        """Skips spaces and tabs, not newlines."""
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r":
            self.pos += 1

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str) -> None:
        if not self.accept(s):
            raise self.error(f"expected '{s}' {what}, found {self.found()}")

    def match(self, regex: re.Pattern) -> re.Match | None:
        self.skip()
        m = regex.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def name(self, what: str) -> str:
        m = self.match(_NAME)
        if not m:
            raise self.error(f"expected {what}, found {self.found()}")
        return m.group(1)

    def keyword(self, word: str) -> bool:
        self.skip()
        m = _IDENT.match(self.text, self.pos)
        if m and m.group(0) == word:
            self.pos = m.end()
            return True
        return False

    def integer(self, what: str = "an integer") -> int:
        """An integer of XLA's int64 attributes (anything wider is an error
        here rather than an overflow further on)."""
        m = self.match(_INT)
        if not m:
            raise self.error(f"expected {what}, found {self.found()}")
        value = int(m.group(0))
        if not -(1 << 63) <= value < (1 << 63):
            raise self.error(f"{m.group(0)} does not fit in 64 bits", m.start())
        return value

    def balanced(self, stop: str, before_instructions: bool = False) -> str:
        """Raw text up to a top-level character of `stop` or the end of the
        line (XLA prints one instruction per line), with brackets balanced
        and strings skipped. With `before_instructions` (an attribute's
        value), also up to another instruction on the same line
        (_INSTRUCTION_START outside brackets and strings): XLA's parser
        takes a module written on one line."""
        self.skip_inline()
        start, depth, text = self.pos, 0, self.text
        special = _BALANCED_STOPS.get(stop)
        if special is None:
            special = _BALANCED_STOPS[stop] = re.compile(
                '["\\n()\\[\\]{}' + re.escape(stop) + "]")
        while True:
            m = special.search(text, self.pos)
            if depth == 0 and before_instructions:
                end = len(text) if m is None else m.start()
                cut = _INSTRUCTION_SPACE.search(text, self.pos, end)
                while cut is not None and not _INSTRUCTION_START.match(text, cut.end()):
                    cut = _INSTRUCTION_SPACE.search(text, cut.end(), end)
                if cut is not None:
                    self.pos = cut.start()
                    break
            if m is None:
                self.pos = len(text)
                break
            self.pos = m.start()
            c = m.group(0)
            if c == '"':
                self.string_literal()
                continue
            if c == "\n" or (depth == 0 and c in stop):
                break
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            self.pos += 1
        if depth != 0:
            raise self.error("unbalanced brackets in attribute value", start)
        return text[start:self.pos].strip()

    def string_literal(self) -> str:
        """A string's text between its quotes, escapes as written."""
        start = self.pos
        if not self.text.startswith('"', self.pos):
            raise self.error(f"expected a string, found {self.found()}")
        m = _STRING.match(self.text, self.pos)
        if m is None:
            raise self.error("unterminated string", start)
        self.pos = m.end()
        return m.group(1)

    # -- shapes ---------------------------------------------------------------

    def shape(self) -> Shape:
        self.skip()
        start = self.pos
        # Most shapes are `f32[2,3]{1,0}` as XLA prints them: one match.
        m = _PLAIN_SHAPE.match(self.text, start)
        if m and m.group(1) in ELEMENT_TYPES and not self.text.startswith("{", m.end()):
            dims = tuple(int(d) for d in m.group(2).split(",")) if m.group(2) else ()
            order = m.group(3)
            layout = None
            if order is not None:
                minor_to_major = tuple(int(d) for d in order.split(",")) if order else ()
                if minor_to_major and sorted(minor_to_major) != list(range(len(dims))):
                    m = None  # layout() reports it
                else:
                    layout = Layout(minor_to_major, "")
            if m:
                self.pos = m.end()
                return Shape(ELEMENT_TYPES[m.group(1)], dims, layout)
        if self.accept("("):
            shapes = []
            if not self.accept(")"):
                while True:
                    shapes.append(self.shape())
                    if self.accept(")"):
                        break
                    self.expect(",", "between tuple element shapes")
            return Shape(tuple_shapes=tuple(shapes))
        m = _IDENT.match(self.text, self.pos)
        if not m or m.group(0) not in ELEMENT_TYPES:
            raise self.error(f"expected a shape (e.g. f32[2,3]), found {self.found()}", start)
        self.pos = m.end()
        etype = ELEMENT_TYPES[m.group(0)]
        if not self.text.startswith("[", self.pos):
            raise self.error(f"expected '[' after element type '{etype.name}'", self.pos)
        self.pos += 1
        dims, dynamic = [], []
        if not self.accept("]"):
            while True:
                self.skip()
                is_dynamic = self.accept("<=") or self.accept("?")
                if self.text[self.pos - 1] == "?":
                    dims.append(-1)
                else:
                    dims.append(self.integer("a dimension size"))
                    if dims[-1] < 0:
                        raise self.error("dimension sizes cannot be negative")
                dynamic.append(is_dynamic)
                if self.accept("]"):
                    break
                self.expect(",", "between dimension sizes")
        layout = None
        # A layout follows immediately: `f32[2,3]{1,0}`.
        if self.text.startswith("{", self.pos):
            layout = self.layout(len(dims))
        return Shape(etype, tuple(dims), layout, dynamic=tuple(dynamic) if any(dynamic) else ())

    def layout(self, rank: int) -> Layout:
        start = self.pos
        self.pos += 1
        minor_to_major: list[int] = []
        self.skip()
        while self.pos < len(self.text) and self.text[self.pos] not in ":}":
            minor_to_major.append(self.integer("a layout dimension"))
            if not self.accept(","):
                break
        extra = ""
        if self.accept(":"):
            extra = self.balanced("}")
        self.expect("}", "to close the layout")
        if minor_to_major and sorted(minor_to_major) != list(range(rank)):
            raise self.error(
                f"layout {{{','.join(map(str, minor_to_major))}}} is not a permutation "
                f"of the {rank} dimensions", start)
        return Layout(tuple(minor_to_major), extra)

    # -- module ---------------------------------------------------------------

    def module(self) -> HloModule:
        self.skip()
        if self.keyword("HloModule"):
            module = HloModule(self.name("a module name"), source=self.source)
            # The spec's gelu.hlo writes `HloModule m:`; tolerate the colon.
            self.skip_inline()
            if self.text.startswith(":", self.pos):
                self.pos += 1
            while self.accept(","):
                key = self.match(_IDENT)
                if not key:
                    raise self.error(f"expected a module attribute, found {self.found()}")
                self.expect("=", f"after module attribute '{key.group(0)}'")
                module.attributes.append(Attribute(key.group(0), self.balanced(",")))
            module.tables = self.tables()
        else:
            # XLA's own emitter tests: a bare list of computations, the
            # entry the one marked ENTRY, else the last.
            if self.pos >= len(self.text):
                raise self.error("expected 'HloModule' or a computation, found the end "
                                 "of the input")
            if not _NAME.match(self.text, self.pos):
                raise self.error(f"expected 'HloModule' or a computation at the start, "
                                 f"found {self.found()}")
            module = HloModule(_module_name(self.source), source=self.source)
        references: list[tuple[HloInstruction, str, list[tuple[str, int]]]] = []
        entry_seen = False
        while True:
            self.skip()
            if self.pos >= len(self.text):
                break
            comp = self.computation(references)
            if comp.is_entry:
                if entry_seen:
                    raise self.error("a second ENTRY computation", self._comp_pos)
                entry_seen = True
            if any(c.name == comp.name for c in module.computations):
                raise self.error(f"computation '{comp.name}' is defined twice", self._comp_pos)
            comp.module = module
            module.computations.append(comp)
        if not module.computations:
            raise self.error("the module has no computation")
        entries = [c for c in module.computations if c.is_entry]
        module.entry = entries[0] if entries else module.computations[-1]
        # Called computations, now that all are known.
        by_name = {c.name: c for c in module.computations}
        for inst, _, refs in references:
            inst.called_computations += self.resolve(
                by_name, refs, lambda n: f"unknown computation '{n}'")
        return module

    def resolve(self, by_name: dict, refs: list[tuple[str, int]], describe) -> list:
        """The objects `refs` ((name, position) pairs) name, or an error at
        the first unknown one."""
        out = []
        for name, pos in refs:
            if name not in by_name:
                raise self.error(describe(name), pos)
            out.append(by_name[name])
        return out

    def tables(self) -> str:
        self.skip()
        start = self.pos
        end = start
        while True:
            self.skip()
            m = _IDENT.match(self.text, self.pos)
            if not m or m.group(0) not in _TABLES:
                break
            self.pos = m.end()
            # Entries: `N "text"` or `N {...}`, one per line.
            while True:
                self.skip()
                if not _INT.match(self.text, self.pos):
                    break
                self.integer()
                self.skip_inline()
                if self.text.startswith('"', self.pos):
                    self.string_literal()
                elif self.text.startswith("{", self.pos):
                    self.balanced("\n")
                else:
                    raise self.error(f"expected a string or '{{' in the {m.group(0)} table, "
                                     f"found {self.found()}")
            end = self.pos
        return self.text[start:end].strip()

    def computation(self, references) -> HloComputation:
        self.skip()
        self._comp_pos = self.pos
        is_entry = self.keyword("ENTRY")
        comp = HloComputation(self.name("a computation name"), is_entry=is_entry)
        if self.peek("("):
            self.signature()
        self.expect("{", f"to open computation '{comp.name}'")
        pending: list[tuple[HloInstruction, list[tuple[str, int]], list[tuple[str, int]]]] = []
        explicit_root = None
        names: set[str] = set()
        while not self.accept("}"):
            self.skip()
            if self.pos >= len(self.text):
                raise self.error(f"expected '}}' to close computation '{comp.name}', "
                                 "found end of input")
            inst, is_root, operands, preds, calls = self.instruction()
            if inst.name in names:
                raise self.error(f"instruction '{inst.name}' is defined twice in "
                                 f"computation '{comp.name}'", self._inst_pos)
            if is_root:
                if explicit_root is not None:
                    raise self.error("a second ROOT instruction", self._inst_pos)
                explicit_root = inst
            inst.parent = comp
            names.add(inst.name)
            comp.instructions.append(inst)
            pending.append((inst, operands, preds))
            if calls:
                references.append((inst, comp.name, calls))
        if not comp.instructions:
            raise self.error(f"computation '{comp.name}' has no instructions")
        by_name = {i.name: i for i in comp.instructions}
        for inst, operands, preds in pending:
            inst.operands = self.resolve(
                by_name, operands, lambda n: f"unknown operand '{n}' in computation '{comp.name}'")
            for operand in inst.operands:
                operand.users.append(inst)
            inst.control_predecessors = self.resolve(
                by_name, preds, lambda n: f"unknown control predecessor '{n}'")
        comp.root = explicit_root or comp.instructions[-1]
        numbers = sorted(p.parameter_number for p in comp.parameters)
        if numbers != list(range(len(numbers))):
            raise self.error(f"parameters of computation '{comp.name}' are numbered "
                             f"{numbers}, expected 0..{len(numbers) - 1}", self._comp_pos)
        self._check_acyclic(comp)
        return comp

    def _check_acyclic(self, comp: HloComputation) -> None:
        state: dict[int, int] = {}
        for start in comp.instructions:
            stack = [(start, iter(start.operands))]
            if state.get(id(start)):
                continue
            state[id(start)] = 1
            while stack:
                inst, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[id(inst)] = 2
                    stack.pop()
                elif state.get(id(nxt)) == 1:
                    raise HloParseError(f"instruction '{nxt.name}' depends on itself",
                                        nxt.line, nxt.column, self.source)
                elif not state.get(id(nxt)):
                    state[id(nxt)] = 1
                    stack.append((nxt, iter(nxt.operands)))

    def signature(self) -> None:
        """`(p0: f32[2], p1: s32[]) -> f32[2]`: informational, not needed."""
        self.expect("(", "to open the computation signature")
        if not self.accept(")"):
            while True:
                self.name("a parameter name")
                self.expect(":", "after the parameter name")
                self.shape()
                if self.accept(")"):
                    break
                self.expect(",", "between parameters")
        self.expect("->", "before the result shape")
        self.shape()

    def instruction(self):
        self.skip()
        self._inst_pos = self.pos
        line, col = self.where()
        is_root = self.keyword("ROOT")
        name = self.name("an instruction name")
        self.expect("=", f"after instruction name '{name}'")
        shape = self.shape()
        m = self.match(_IDENT)
        if not m:
            raise self.error(f"expected an opcode after the shape, found {self.found()}")
        opcode, opcode_pos = m.group(0), m.start()
        if opcode not in XLA_OPCODES:
            raise self.error(f"unknown opcode '{opcode}'", opcode_pos)
        inst = HloInstruction(name, opcode, shape, line=line, column=col)
        self.expect("(", f"after opcode '{opcode}'")
        operands: list[tuple[str, int]] = []
        if opcode == "parameter":
            inst.parameter_number = self.integer("a parameter number")
            self.expect(")", "after the parameter number")
        elif opcode == "constant":
            self.skip_inline()  # where the literal's text starts (balanced strips it)
            lit_pos = self.pos
            text = self.balanced(")")
            self.expect(")", "to close the constant's literal")
            inst.literal = Literal(text, self.literal(text, shape, lit_pos))
        elif not self.accept(")"):
            while True:
                self.skip()
                # Operands may carry their shape: `f32[2]{0} %x`.
                m = _IDENT.match(self.text, self.pos)
                if (self.text.startswith("(", self.pos) or
                        (m and m.group(0) in ELEMENT_TYPES and
                         self.text.startswith("[", m.end()))):
                    self.shape()
                self.skip()
                pos = self.pos
                operands.append((self.name("an operand name"), pos))
                if self.accept(")"):
                    break
                self.expect(",", "between operands")
        expected = XLA_OPCODES[opcode]
        if expected is not None and len(operands) != expected and opcode not in (
                "parameter", "constant"):
            raise self.error(f"'{opcode}' takes {expected} operand{'s' * (expected != 1)}, "
                             f"got {len(operands)}", self._inst_pos)
        preds: list[tuple[str, int]] = []
        calls: list[tuple[str, int]] = []
        while self.accept(","):
            self.skip()
            key_pos = self.pos
            key = self.match(_IDENT)
            if not key:
                raise self.error(f"expected an attribute name, found {self.found()}")
            self.expect("=", f"after attribute '{key.group(0)}'")
            self.skip_inline()
            value_pos = self.pos
            text = self.balanced(",", before_instructions=True)
            if key.group(0) in inst.attributes:
                raise self.error(f"attribute '{key.group(0)}' is given twice", key_pos)
            attr = Attribute(key.group(0), text)
            attr.value = self.attribute_value(attr, value_pos, calls, preds)
            inst.attributes[attr.name] = attr
        return inst, is_root, operands, preds, calls

    # -- attribute values -------------------------------------------------------

    def sub(self, text: str, pos: int) -> "_Parser":
        """A parser over an attribute's text, reporting positions in the file."""
        p = _Parser(self.text[:pos + len(text)], self.source, self._lines())
        p.pos = pos
        return p

    def attribute_value(self, attr: Attribute, pos: int, calls, preds) -> Any:
        name, text = attr.name, attr.text
        p = self.sub(text, pos)
        if name in _INT_LIST_ATTRS:
            return p.int_list(name)
        if name in _INT_ATTRS:
            value = p.integer(f"an integer for '{name}'")
            p.end(name)
            return value
        if name in _BOOL_ATTRS:
            if text not in ("true", "false"):
                raise self.error(f"expected true or false for '{name}', found '{text}'", pos)
            return text == "true"
        if name in _WORD_ATTRS:
            if not _IDENT.fullmatch(text):
                raise self.error(f"expected a name for '{name}', found '{text}'", pos)
            return text
        if name in _COMPUTATION_ATTRS:
            names = p.name_list(name)
            calls.extend(names)
            return [n for n, _ in names] if text.startswith("{") else names[0][0]
        if name == "control-predecessors":
            names = p.name_list(name)
            preds.extend(names)
            return [n for n, _ in names]
        if name == "slice":
            return p.slice_ranges()
        if name == "padding":
            return p.padding(text)
        if name == "window":
            return p.window()
        if name in ("custom_call_target",):
            value = p.string_literal()
            p.end(name)
            return value
        if name in ("metadata", "frontend_attributes"):
            return p.key_values(name)
        return None

    def end(self, name: str) -> None:
        self.skip()
        if self.pos < len(self.text):
            raise self.error(f"unexpected {self.found()} in the value of '{name}'")

    def int_list(self, name: str) -> list[int]:
        self.expect("{", f"to open the list of '{name}'")
        values = []
        if not self.accept("}"):
            while True:
                values.append(self.integer(f"an integer in '{name}'"))
                if self.accept("}"):
                    break
                self.expect(",", f"between the integers of '{name}'")
        self.end(name)
        return values

    def name_list(self, name: str) -> list[tuple[str, int]]:
        self.skip()
        if not self.accept("{"):
            pos = self.pos
            value = self.name(f"a computation name for '{name}'")
            self.end(name)
            return [(value, pos)]
        names = []
        if not self.accept("}"):
            while True:
                self.skip()
                pos = self.pos
                names.append((self.name(f"a name in '{name}'"), pos))
                if self.accept("}"):
                    break
                self.expect(",", f"between the names of '{name}'")
        self.end(name)
        return names

    def slice_ranges(self) -> list[tuple[int, int, int]]:
        self.expect("{", "to open the slice")
        ranges = []
        if not self.accept("}"):
            while True:
                self.expect("[", "to open a slice range")
                start = self.integer("a slice start")
                self.expect(":", "after the slice start")
                limit = self.integer("a slice limit")
                stride = 1
                if self.accept(":"):
                    stride = self.integer("a slice stride")
                    if stride <= 0:
                        raise self.error(f"slice stride must be positive, got {stride}")
                self.expect("]", "to close the slice range")
                ranges.append((start, limit, stride))
                if self.accept("}"):
                    break
                self.expect(",", "between slice ranges")
        self.end("slice")
        return ranges

    def padding(self, text: str) -> list[tuple[int, int, int]]:
        dims = []
        if not text:
            return dims
        for part in text.split("x"):
            self.skip()
            lo = self.integer("the low padding")
            self.expect("_", "between paddings")
            hi = self.integer("the high padding")
            interior = 0
            if self.accept("_"):
                interior = self.integer("the interior padding")
                if interior < 0:
                    raise self.error("interior padding cannot be negative")
            dims.append((lo, hi, interior))
            if not self.accept("x"):
                break
        self.end("padding")
        return dims

    def window(self) -> dict[str, list]:
        self.expect("{", "to open the window")
        fields: dict[str, list] = {}
        while not self.accept("}"):
            key = self.match(_IDENT)
            if not key:
                raise self.error(f"expected a window field, found {self.found()}")
            field = key.group(0)
            self.expect("=", f"after window field '{field}'")
            # 2x3x1, or pairs: 0_0x1_1.
            values = []
            while True:
                parts = [self.integer(f"an integer in window field '{field}'")]
                while self.text.startswith("_", self.pos):
                    self.pos += 1
                    parts.append(self.integer(f"an integer in window field '{field}'"))
                values.append(tuple(parts) if len(parts) > 1 else parts[0])
                if not self.text.startswith("x", self.pos):
                    break
                self.pos += 1
            fields[field] = values
        self.end("window")
        return fields

    def key_values(self, name: str) -> dict[str, str]:
        self.expect("{", f"to open '{name}'")
        out = {}
        while not self.accept("}"):
            key = self.match(_IDENT)
            if not key:
                raise self.error(f"expected a key in '{name}', found {self.found()}")
            self.expect("=", f"after key '{key.group(0)}'")
            self.skip()
            if self.text.startswith('"', self.pos):
                out[key.group(0)] = self.string_literal()
            else:
                raw = re.compile(r"[^\s,}]+").match(self.text, self.pos)
                if not raw:
                    raise self.error(f"expected a value for '{key.group(0)}'")
                self.pos = raw.end()
                out[key.group(0)] = raw.group(0)
            self.accept(",")
        self.end(name)
        return out

    # -- literals -------------------------------------------------------------

    def literal(self, text: str, shape: Shape, pos: int) -> np.ndarray | None:
        if shape.is_tuple or not shape.is_array:
            return None
        if re.fullmatch(r"\{\s*\.\.\.\s*\}", text):
            return None  # elided by the printer
        etype = shape.element_type
        bulk = _bulk_values(text, etype, shape.num_elements)
        if bulk is not None:
            return bulk.reshape(shape.dims)
        p = self.sub(text, pos)
        values: list = []
        p.literal_values(values, etype)
        p.end("the literal")
        if len(values) != shape.num_elements:
            raise self.error(f"the literal has {len(values)} values, the shape "
                             f"{shape.to_text(layout=False)} needs {shape.num_elements}", pos)
        try:
            if etype.is_pred:
                array = np.array(values, dtype=np.bool_)
            elif etype.is_complex:
                array = np.array(values, dtype=np.complex128).astype(etype.dtype)
            elif etype.is_float:
                array = np.array(values, dtype=np.float64).astype(etype.dtype)
            else:
                bits = etype.bits
                lo = -(1 << (bits - 1)) if etype.is_signed else 0
                hi = (1 << (bits - 1)) - 1 if etype.is_signed else (1 << bits) - 1
                for v in values:
                    if not lo <= v <= hi:
                        raise self.error(f"{v} is out of range for {etype.name}", pos)
                array = np.array(values, dtype=object).astype(etype.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise self.error(f"bad literal for {etype.name}: {e}", pos) from None
        return array.reshape(shape.dims)

    def literal_values(self, out: list, etype) -> None:
        self.skip()
        if self.accept("{"):
            if not self.accept("}"):
                while True:
                    self.literal_values(out, etype)
                    if self.accept("}"):
                        break
                    self.expect(",", "between literal values")
            return
        out.append(self.scalar(etype))

    def scalar(self, etype) -> Any:
        self.skip()
        if etype.is_pred:
            if self.keyword("true"):
                return True
            if self.keyword("false"):
                return False
            m = self.match(re.compile(r"[01]\b"))
            if m:
                return m.group(0) == "1"
            raise self.error(f"expected true or false, found {self.found()}")
        if etype.is_complex:
            self.expect("(", "to open a complex value")
            re_part = self.real()
            self.expect(",", "between the real and imaginary parts")
            im_part = self.real()
            self.expect(")", "to close a complex value")
            return complex(re_part, im_part)
        if etype.is_float:
            return self.real()
        m = self.match(_INT)
        if not m:
            raise self.error(f"expected an integer for {etype.name}, found {self.found()}")
        return int(m.group(0))

    def real(self) -> float:
        m = self.match(_NUMBER)
        if not m:
            raise self.error(f"expected a number, found {self.found()}")
        text = m.group(0).lstrip("+")
        sign = -1.0 if text.startswith("-") else 1.0
        body = text.lstrip("-")
        if body == "inf":
            return sign * math.inf
        if body.startswith("nan"):
            return math.copysign(math.nan, sign)
        return float(text)


# A literal's values read in bulk (numpy's text reader) where its text is
# only numbers, braces, commas and spaces: XLA prints a program's
# closed-over arrays whole (print_large_constants), an embedding table of
# 8M floats as ~100 MB, which the parser's value-at-a-time reading took
# ~20 s over. Anything else, and a count or value the shape does not take,
# is read by literal_values, whose error names the place.
_BULK_FLOAT = re.compile(r"[\s{},0-9.eE+infa-]*")  # inf, nan; numpy refuses other words
_BULK_INT = re.compile(r"[\s{},0-9-]*")
# Wider than any int64 (strtoll would saturate it).
_WIDE_INT = re.compile(r"[0-9]{19}")
_BRACES_TO_SPACES = str.maketrans("{}", "  ")
_EMPTY_ITEM = re.compile(r",\s*,")
_BAD_MINUS = re.compile(r"-(?![0-9])|[0-9-]-")
_BRACE = re.compile(r"[{}]")
_TWO_DIGITS = re.compile(r"[0-9]{2}")
# A list and a value beside it without a comma (`{1} 2`, `1 {2}`).
_UNSEPARATED_LIST = re.compile(r"\}\s*[^\s,}]|[^\s,{]\s*\{")


def _one_outer_list(text: str) -> bool:
    """Whether `text` is a scalar or one brace list, the first brace
    closed by the last (`{1}, {2}` is two: an error)."""
    braces = _BRACE.findall(text)
    if not braces:
        return "," not in text
    text = text.strip()
    if text[0] != "{" or text[-1] != "}":
        return False
    depth = np.cumsum(np.where(np.frombuffer("".join(braces).encode(), np.uint8) == ord("{"),
                               1, -1))
    return bool(depth[-1] == 0 and (depth[:-1] > 0).all())


def _bulk_values(text: str, etype, count: int) -> np.ndarray | None:
    """The literal's values as an array of its element type, or None where
    the bulk reader does not take the text (see _BULK_FLOAT)."""
    if etype.is_complex or etype.dtype is None:
        return None
    if etype.is_pred:
        if "-" in text:
            return None
        text = text.replace("true", "1").replace("false", "0")
        if _TWO_DIGITS.search(text):  # `01`, `0false`: a pred is one word
            return None
    if not (_BULK_FLOAT if etype.is_float else _BULK_INT).fullmatch(text):
        return None
    if "-nan" in text:  # numpy's reader drops a NaN's sign
        return None
    body = text.translate(_BRACES_TO_SPACES).strip()
    # numpy's reader fills an empty item (`1, , 2`) and, for integers, a
    # lone `-` with a made-up value; the value-at-a-time reader refuses
    # both. Other malformed items numpy refuses itself.
    if not body or body[0] == "," or body[-1] == "," or _EMPTY_ITEM.search(body):
        return None
    if not etype.is_float and _BAD_MINUS.search(body):
        return None
    if _UNSEPARATED_LIST.search(text):
        return None
    if not _one_outer_list(text):
        return None
    if not etype.is_float and _WIDE_INT.search(text):
        return None
    unsigned_64 = not etype.is_float and not etype.is_signed and etype.bits == 64
    if unsigned_64 and "-" in text:
        return None
    dtype = np.float64 if etype.is_float else np.uint64 if unsigned_64 else np.int64
    with warnings.catch_warnings():
        # numpy warns where the text stops matching (a missing comma).
        warnings.simplefilter("error")
        try:
            values = np.fromstring(body, dtype=dtype, sep=",")
        except (ValueError, DeprecationWarning):
            return None
    if values.size != count:
        return None
    if etype.is_pred:
        return values.astype(np.bool_) if np.all((values == 0) | (values == 1)) else None
    if not etype.is_float and not unsigned_64:
        lo = -(1 << (etype.bits - 1)) if etype.is_signed else 0
        hi = (1 << (etype.bits - 1)) - 1 if etype.is_signed else (1 << etype.bits) - 1
        if values.size and (values.min() < lo or values.max() > hi):
            return None
    return values.astype(etype.dtype)


def _module_name(source: str | None) -> str:
    """A name for a module written without an `HloModule` line: the file's
    stem, as an HLO name."""
    stem = re.sub(r"\.[^./]*$", "", (source or "module").rsplit("/", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "module"


def parse_hlo(text: str, source: str | None = None) -> HloModule:
    """Parses an HLO module (with or without its `HloModule` line); raises
    HloParseError with line:column."""
    return _Parser(text, source).module()


def parse_shape(text: str) -> Shape:
    """Parses one shape, e.g. `f32[2,3]{1,0}` or `(s32[], pred[4])`."""
    p = _Parser(text, None)
    shape = p.shape()
    p.end("the shape")
    return shape
