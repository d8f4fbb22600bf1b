"""The HLO front end: a model of HLO modules, a parser for XLA's text format
and a printer that gives the text back.

    module = parse_hlo(open("gelu.hlo").read(), source="gelu.hlo")
    module.entry.root.opcode          # "fusion"
    module.to_text()                  # parse(to_text()) prints the same
"""

from .module import Attribute, HloComputation, HloInstruction, HloModule, Literal
from .parser import HloParseError, parse_hlo, parse_shape
from .shape import Layout, Shape
from .types import ELEMENT_TYPES, ElementType, element_type

__all__ = [
    "Attribute", "ELEMENT_TYPES", "ElementType", "HloComputation", "HloInstruction",
    "HloModule", "HloParseError", "Layout", "Literal", "Shape", "element_type",
    "parse_hlo", "parse_shape",
]
