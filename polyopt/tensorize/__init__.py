"""Tensorization, proven legal: a schedule maps a sub-nest onto an intrinsic (a hardware
instruction or micro-kernel) when the sub-nest computes exactly what the intrinsic
does (decided on isl objects, :mod:`.match`); built-in intrinsics for AVX-512 VNNI
(:mod:`.builtin`) and schedule templates on them (:mod:`.templates`).

``po.decl_tensor_intrin``, ``po.decl_buffer``, ``po.tensorize.call_extern``,
``import_llvm``, ``import_c``; ``s[C].tensorize(axis, intrin)``; ``s[C].pragma(axis,
"import_llvm", code)`` (:mod:`.pragma`).
"""

from .intrin import (Buffer, ExternCall, Import, LLVMEmitter, TensorIntrin,  # noqa: F401
                     call_extern, decl_buffer, decl_tensor_intrin, import_c, import_llvm)
from . import apply  # noqa: F401,E402  (registers tensorize: s[C].tensorize, can_tensorize)
from . import pragma  # noqa: F401,E402  (the pragma primitive: import_llvm, import_c)
