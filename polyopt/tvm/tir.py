"""``tvm.tir``: the scalar expression functions classic TE code calls through it."""

from .. import (abs, all, any, exp, if_then_else, log, max_value, min_value, sqrt,  # noqa
                tanh)
from ..te.compat import Select, const, indexdiv, indexmod  # noqa: F401
from ..te.compat import indexdiv as floordiv, indexmod as floormod  # noqa: F401
from ..te.tensor import maximum as max, minimum as min  # noqa: F401,A004
from ..te.tensor import var as Var  # noqa: F401
from ..te.extern import call_packed, call_pure_extern  # noqa: F401
